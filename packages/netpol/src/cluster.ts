// An index of the cluster state that translate() queries: namespaces with their labels, pods
// with parsed addresses and named ports, and label-selector results cached per selector so a
// selector shared by many policies is evaluated once.
import {
  ANYCAST_ANNOTATION,
  ipFamily,
  matchesSelector,
  parseAnycast,
  type LabelSelector,
  type Pod,
  type Protocol,
} from '@flock/api';
import { addressInterval } from './addresses.js';
import { fail } from './errors.js';
import { NodeIndex, type PodAddress } from './nodes.js';
import type { State } from './state.js';

export type { PodAddress };

// One update() counter shared by every Cluster: a PodInfo's stamp is the last update() that saw
// it.
let epochs = 0;

/** Label every namespace carries (set by the API server since Kubernetes 1.21). */
export const NAMESPACE_NAME_LABEL = 'kubernetes.io/metadata.name';

export interface NamedPort {
  name: string;
  protocol: Protocol;
  port: number;
}

/** status.podIPs, else status.podIP. */
function podIPs(pod: Pod): string[] {
  return pod.status?.podIPs?.map((p) => p.ip) ?? (pod.status?.podIP ? [pod.status.podIP] : []);
}

function podAddresses(key: string, ips: string[]): PodAddress[] {
  const seen = new Set<bigint>();
  const out: PodAddress[] = [];
  for (const ip of ips) {
    const parsed = addressInterval(ip);
    if (!parsed) fail(`pod ${key}`, 'status.podIPs', `${JSON.stringify(ip)} is not an IP address`);
    if (seen.has(parsed.interval.lo)) continue;
    seen.add(parsed.interval.lo);
    out.push({ family: parsed.family, n: parsed.interval.lo });
  }
  return out;
}

// What replicas have in common, shared. The agent's pod cache shares one containers array among
// replicas.
const EMPTY: Record<string, string> = Object.freeze({});
const NO_PORTS: NamedPort[] = [];
const NAMED_PORTS = new WeakMap<object, NamedPort[]>();

function namedPortsOf(
  containers: NonNullable<NonNullable<Pod['spec']>['containers']>,
): NamedPort[] {
  let hit = NAMED_PORTS.get(containers);
  if (!hit) {
    hit = containers.flatMap((c) =>
      (c.ports ?? []).flatMap((p) =>
        p.name ? [{ name: p.name, protocol: p.protocol ?? 'TCP', port: p.containerPort }] : [],
      ),
    );
    NAMED_PORTS.set(containers, hit);
  }
  return hit;
}

/**
 * A pod as translate() reads it: a view of the Pod object, not a copy. Every agent indexes every
 * pod of the cluster, and a copy of each (parsed addresses, its key) cost as much as the agent's
 * pod cache; addresses are parsed when a set first needs them, so only the pods some local pod's
 * policies select keep theirs.
 */
export class PodInfo {
  /** The last Cluster.update() that saw this pod. */
  stamp = 0;
  private parsed: PodAddress[] | undefined = undefined;

  /** Throws NetpolError when an address does not parse. */
  constructor(public pod: Pod) {
    for (const ip of podIPs(pod))
      if (!ipFamily(ip))
        fail(`pod ${this.key}`, 'status.podIPs', `${JSON.stringify(ip)} is not an IP address`);
  }

  /** `namespace/name` */
  get key(): string {
    return `${this.pod.metadata.namespace}/${this.pod.metadata.name}`;
  }

  get namespace(): string {
    return this.pod.metadata.namespace;
  }

  get labels(): Record<string, string> {
    return this.pod.metadata.labels ?? EMPTY;
  }

  get annotations(): Record<string, string> {
    return this.pod.metadata.annotations ?? EMPTY;
  }

  /** Running or pending: a Succeeded or Failed pod's addresses may already belong to another pod. */
  get live(): boolean {
    const phase = this.pod.status?.phase;
    return phase !== 'Succeeded' && phase !== 'Failed';
  }

  get namedPorts(): NamedPort[] {
    const containers = this.pod.spec?.containers;
    return containers ? namedPortsOf(containers) : NO_PORTS;
  }

  /** Its addresses, parsed once (repeats left out). */
  get addresses(): PodAddress[] {
    return (this.parsed ??= this.parse());
  }

  /** Same addresses as `other`, without keeping either's parsed form. */
  sameAddresses(other: PodInfo): boolean {
    const a = podIPs(this.pod);
    const b = podIPs(other.pod);
    if (a.length === b.length && a.every((ip, i) => ip === b[i])) return true;
    const x = this.parsed ?? this.parse();
    const y = other.parsed ?? other.parse();
    return x.length === y.length && x.every((v, i) => v.family === y[i]?.family && v.n === y[i].n);
  }

  private parse(): PodAddress[] {
    return podAddresses(this.key, podIPs(this.pod));
  }
}

const json = (x: unknown) => JSON.stringify(x);

/** Same meaning for translate(): objects differ but every field it reads is equal. */
function samePod(a: PodInfo, b: PodInfo): boolean {
  return (
    a === b ||
    (a.key === b.key &&
      a.live === b.live &&
      a.sameAddresses(b) &&
      json(a.labels) === json(b.labels) &&
      json(a.namedPorts) === json(b.namedPorts) &&
      json(a.annotations) === json(b.annotations))
  );
}

/** A pod that came, went or changed between two states (before/after undefined: absent). */
export interface PodChange {
  before?: PodInfo;
  after?: PodInfo;
}

/** A namespace that came, went or changed its labels (with the name label included). */
export interface NamespaceChange {
  name: string;
  before?: Record<string, string>;
  after?: Record<string, string>;
}

export interface ClusterChanges {
  pods: PodChange[];
  namespaces: NamespaceChange[];
  /** The state's podRanges changed. */
  podRanges?: boolean;
}

export class Cluster {
  namespaceLabels = new Map<string, Record<string, string>>();

  private namespaceCache = new Map<string, string[]>();
  /** Pods by namespace and name (no `namespace/name` string a pod); live or not. */
  private readonly byNamespace = new Map<string, Map<string, PodInfo>>();
  private podCount = 0;
  /** Per namespace: its live pods, and selector results in it. */
  private readonly liveCache = new Map<string, PodInfo[]>();
  private readonly podCache = new Map<string, Map<string, PodInfo[]>>();
  private allLive: PodInfo[] | undefined;
  /** The PodInfo that reads each Pod object (an object read again is found without its name). */
  private readonly byObject = new WeakMap<Pod, PodInfo>();
  /** Nodes (labels, addresses) for ClusterNetworkPolicy `nodes` peers, and selector results. */
  private readonly nodes = new NodeIndex();
  /** Where the cluster's pods have their addresses (the state's podRanges). */
  podRanges: readonly string[] = [];

  constructor(state: State) {
    this.update(state);
  }

  /** The pod `namespace/name`, if the state has it. */
  pod(namespace: string, name: string): PodInfo | undefined {
    return this.byNamespace.get(namespace)?.get(name);
  }

  /**
   * Make this index describe `state`; returns what changed since the last state. Pod objects
   * seen before (the same object) are not read again. Throws NetpolError on invalid input,
   * leaving the index as it was.
   */
  update(state: State): ClusterChanges {
    const labels = new Map<string, Record<string, string>>();
    for (const ns of state.namespaces) {
      const name = ns.metadata.name;
      if (labels.has(name)) fail(`namespace ${name}`, 'metadata.name', 'listed twice');
      const after = { ...ns.metadata.labels, [NAMESPACE_NAME_LABEL]: name };
      const before = this.namespaceLabels.get(name);
      // Unchanged labels stay the same object: caches of what they select compare by identity.
      labels.set(name, before && json(before) === json(after) ? before : after);
    }
    // One pass over the pods without building a new index: each PodInfo is stamped with this
    // call's epoch (a pod listed twice meets its own stamp); only what differs is collected.
    const epoch = ++epochs;
    const fresh = new Map<string, PodInfo>(); // keys whose PodInfo differs from the index's
    // Same content in a new object: the index's PodInfo reads the new one once the state is valid.
    const rebound: [PodInfo, Pod][] = [];
    let kept = 0;
    for (const pod of state.pods) {
      const { namespace, name } = pod.metadata;
      // The same object as before: one lookup by identity, not two by name.
      const seen = this.byObject.get(pod);
      const current = seen?.pod === pod ? seen : this.pod(namespace, name);
      let info = current;
      if (info?.pod !== pod) {
        const read = new PodInfo(pod);
        if (current && samePod(current, read)) rebound.push([current, pod]);
        else info = read;
      }
      // The key only for what is new: a pass over unchanged pods allocates nothing.
      const key = current === info ? undefined : `${namespace}/${name}`;
      if (current?.stamp === epoch || (key !== undefined && fresh.has(key)))
        fail(`pod ${namespace}/${name}`, 'metadata.name', 'listed twice');
      if (!labels.has(namespace))
        fail(
          `pod ${namespace}/${name}`,
          'metadata.namespace',
          `namespace ${JSON.stringify(namespace)} is not in the state's namespaces`,
        );
      if (key === undefined) {
        (current as PodInfo).stamp = epoch;
        kept++;
      } else fresh.set(key, info as PodInfo);
    }
    for (const [info, pod] of rebound) {
      info.pod = pod;
      this.byObject.set(pod, info);
    }
    const changes: ClusterChanges = { pods: [], namespaces: [] };
    for (const [name, after] of labels) {
      const before = this.namespaceLabels.get(name);
      if (before !== after) changes.namespaces.push({ name, before, after });
    }
    for (const [name, before] of this.namespaceLabels) {
      if (!labels.has(name)) changes.namespaces.push({ name, before });
    }
    for (const after of fresh.values())
      changes.pods.push({ before: this.pod(after.namespace, after.pod.metadata.name), after });
    const replaced = changes.pods.filter((c) => c.before).length;
    if (kept + replaced < this.podCount) {
      for (const pods of this.byNamespace.values())
        for (const before of pods.values())
          if (before.stamp !== epoch && !fresh.has(before.key)) changes.pods.push({ before });
    }
    this.namespaceLabels = labels;
    if (changes.namespaces.length) this.namespaceCache = new Map();
    for (const c of changes.pods) {
      if (c.before) {
        const pods = this.byNamespace.get(c.before.namespace);
        pods?.delete(c.before.pod.metadata.name);
        this.byObject.delete(c.before.pod); // the object may come back: it is read again then
        if (pods?.size === 0) this.byNamespace.delete(c.before.namespace);
        this.podCount--;
      }
      if (c.after) {
        c.after.stamp = epoch;
        let pods = this.byNamespace.get(c.after.namespace);
        if (!pods) this.byNamespace.set(c.after.namespace, (pods = new Map<string, PodInfo>()));
        pods.set(c.after.pod.metadata.name, c.after);
        this.byObject.set(c.after.pod, c.after);
        this.podCount++;
      }
      for (const ns of [c.before?.namespace, c.after?.namespace]) {
        if (ns === undefined) continue;
        this.liveCache.delete(ns);
        this.podCache.delete(ns);
      }
    }
    if (changes.pods.length) this.allLive = undefined;
    this.nodes.update(state.nodes);
    const ranges = state.podRanges;
    if (ranges.length !== this.podRanges.length || ranges.some((r, i) => r !== this.podRanges[i]))
      changes.podRanges = true;
    this.podRanges = ranges;
    return changes;
  }

  /** Counts the changes of the nodes' labels or addresses (what `nodes` peers select). */
  get nodesVersion(): number {
    return this.nodes.version;
  }

  /** Addresses of the nodes a `nodes` peer selects (their status.addresses that are IPs). */
  nodeAddresses(selector: LabelSelector): PodAddress[] {
    return this.nodes.addresses(selector);
  }

  hasNamespace(name: string): boolean {
    return this.namespaceLabels.has(name);
  }

  /** Live pods of one namespace. */
  podsIn(namespace: string): PodInfo[] {
    let hit = this.liveCache.get(namespace);
    if (!hit) {
      hit = [...(this.byNamespace.get(namespace)?.values() ?? [])].filter((p) => p.live);
      this.liveCache.set(namespace, hit);
    }
    return hit;
  }

  /** Every live pod of the cluster (namespace by namespace). */
  allLivePods(): PodInfo[] {
    this.allLive ??= [...this.byNamespace.keys()].flatMap((ns) => this.podsIn(ns));
    return this.allLive;
  }

  /** Names of the namespaces a namespaceSelector selects. */
  selectNamespaces(selector: LabelSelector): string[] {
    const key = JSON.stringify(selector);
    let hit = this.namespaceCache.get(key);
    if (!hit) {
      hit = [...this.namespaceLabels]
        .filter(([, labels]) => matchesSelector(selector, labels))
        .map(([n]) => n);
      this.namespaceCache.set(key, hit);
    }
    return hit;
  }

  /** Live pods of `namespace` matched by `selector` (absent selector: all of them). */
  selectPods(namespace: string, selector: LabelSelector | null | undefined): PodInfo[] {
    const key = JSON.stringify(selector ?? {});
    let inNamespace = this.podCache.get(namespace);
    if (!inNamespace) this.podCache.set(namespace, (inNamespace = new Map<string, PodInfo[]>()));
    let hit = inNamespace.get(key);
    if (!hit) {
      hit = this.podsIn(namespace).filter((p) => matchesSelector(selector ?? undefined, p.labels));
      inNamespace.set(key, hit);
    }
    return hit;
  }

  /** A peer's pods: podSelector in the policy's namespace, or in every namespace the namespaceSelector picks. */
  selectPeerPods(
    policyNamespace: string,
    podSelector: LabelSelector | null | undefined,
    namespaceSelector: LabelSelector | null | undefined,
  ): PodInfo[] {
    const namespaces = namespaceSelector
      ? this.selectNamespaces(namespaceSelector)
      : [policyNamespace];
    return namespaces.flatMap((ns) => this.selectPods(ns, podSelector));
  }

  /** Anycast addresses a local pod may send from: given by the agent, else its annotation. */
  anycastOf(pod: PodInfo, given: string[] | undefined): string[] {
    if (given) return given;
    const parsed = parseAnycast(pod.annotations[ANYCAST_ANNOTATION]);
    if (parsed && !parsed.ok)
      fail(`pod ${pod.key}`, `metadata.annotations["${ANYCAST_ANNOTATION}"]`, parsed.error);
    return parsed?.value ?? [];
  }
}
