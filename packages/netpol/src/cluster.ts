// An index of the cluster state that translate() queries: namespaces with their labels, pods
// with parsed addresses and named ports, and label-selector results cached per selector so a
// selector shared by many policies is evaluated once.
import {
  ANYCAST_ANNOTATION,
  matchesSelector,
  parseAnycast,
  type Family,
  type LabelSelector,
  type Pod,
  type Protocol,
} from '@flock/api';
import { addressInterval } from './addresses.js';
import { fail } from './errors.js';
import type { Node, State } from './state.js';

// Per-object memos for update(), kept on the objects themselves: a WeakMap lookup per pod costs
// more than the rest of an unchanged pod's handling. A pod's PodInfo is a function of the pod
// (objects are read as immutable); a PodInfo's stamp is the last update() that saw it, from one
// counter shared by every Cluster, so stamps of different clusters never collide.
const INFO = Symbol('flock.netpol.podInfo');
const STAMP = Symbol('flock.netpol.stamp');
type Memo = { [INFO]?: PodInfo };
let epochs = 0;

/** Label every namespace carries (set by the API server since Kubernetes 1.21). */
export const NAMESPACE_NAME_LABEL = 'kubernetes.io/metadata.name';

export interface PodAddress {
  family: Family;
  n: bigint;
}

export interface NamedPort {
  name: string;
  protocol: Protocol;
  port: number;
}

export interface PodInfo {
  /** `namespace/name` */
  key: string;
  namespace: string;
  labels: Record<string, string>;
  addresses: PodAddress[];
  namedPorts: NamedPort[];
  annotations: Record<string, string>;
  /** Running or pending: a Succeeded or Failed pod's addresses may already belong to another pod. */
  live: boolean;
  /** The last Cluster.update() that saw this pod. */
  [STAMP]?: number;
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

// What replicas have in common, shared: a PodInfo for each of 150,000 pods is most of the
// translator's memory. The agent's pod cache shares one containers array among replicas.
const EMPTY: Record<string, string> = Object.freeze({});
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

function podInfo(pod: Pod): PodInfo {
  const { namespace, name } = pod.metadata;
  const key = `${namespace}/${name}`;
  const ips = pod.status?.podIPs?.map((p) => p.ip) ?? (pod.status?.podIP ? [pod.status.podIP] : []);
  return {
    key,
    namespace,
    labels: pod.metadata.labels ?? EMPTY,
    addresses: podAddresses(key, ips),
    namedPorts: pod.spec?.containers ? namedPortsOf(pod.spec.containers) : [],
    annotations: pod.metadata.annotations ?? EMPTY,
    live: pod.status?.phase !== 'Succeeded' && pod.status?.phase !== 'Failed',
    [STAMP]: 0, // in the object from the start: set on every update()
  };
}

const json = (x: unknown) => JSON.stringify(x);

interface NodeInfo {
  name: string;
  labels: Record<string, string>;
  addresses: PodAddress[];
}

/** A node's labels and the IPs among its status.addresses (InternalIP, ExternalIP, ...). */
function nodeInfo(node: Node): NodeInfo {
  const seen = new Set<bigint>();
  const addresses: PodAddress[] = [];
  for (const a of node.status?.addresses ?? []) {
    const parsed = addressInterval(a.address);
    if (!parsed || seen.has(parsed.interval.lo)) continue; // a Hostname entry, or a repeat
    seen.add(parsed.interval.lo);
    addresses.push({ family: parsed.family, n: parsed.interval.lo });
  }
  return { name: node.metadata.name, labels: node.metadata.labels ?? {}, addresses };
}

/** Same meaning for translate(): objects differ but every field it reads is equal. */
function samePod(a: PodInfo, b: PodInfo): boolean {
  return (
    a === b ||
    (a.key === b.key &&
      a.live === b.live &&
      a.addresses.length === b.addresses.length &&
      a.addresses.every(
        (x, i) => x.family === b.addresses[i]?.family && x.n === b.addresses[i].n,
      ) &&
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
}

export class Cluster {
  namespaceLabels = new Map<string, Record<string, string>>();
  readonly pods = new Map<string, PodInfo>();

  private namespaceCache = new Map<string, string[]>();
  /** Per namespace: its live pods, and selector results in it. */
  private readonly byNamespace = new Map<string, Map<string, PodInfo>>();
  private readonly liveCache = new Map<string, PodInfo[]>();
  private readonly podCache = new Map<string, Map<string, PodInfo[]>>();
  private allLive: PodInfo[] | undefined;
  /** Nodes (labels, addresses) for ClusterNetworkPolicy `nodes` peers, and selector results. */
  private nodes: NodeInfo[] = [];
  private nodesJson = '[]';
  private readonly nodeCache = new Map<string, PodAddress[]>();
  /** Counts the changes of the nodes' labels or addresses (what `nodes` peers select). */
  nodesVersion = 0;

  constructor(state: State) {
    this.update(state);
  }

  /**
   * Make this index describe `state`; returns what changed since the last state. Pod objects
   * seen before (the same object) are not parsed again. Throws NetpolError on invalid input,
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
    let kept = 0;
    for (const pod of state.pods) {
      let info = (pod as Memo)[INFO];
      if (!info) {
        info = podInfo(pod);
        const old = this.pods.get(info.key);
        if (old && samePod(old, info)) info = old; // same content: keep one object
        // Not enumerable: copies ({ ...pod }) do not inherit it. A frozen pod is parsed each time.
        if (Object.isExtensible(pod)) Object.defineProperty(pod, INFO, { value: info });
      }
      const current = this.pods.get(info.key);
      if (fresh.has(info.key) || (current !== undefined && current[STAMP] === epoch))
        fail(`pod ${info.key}`, 'metadata.name', 'listed twice');
      if (!labels.has(info.namespace))
        fail(
          `pod ${info.key}`,
          'metadata.namespace',
          `namespace ${JSON.stringify(info.namespace)} is not in the state's namespaces`,
        );
      info[STAMP] = epoch;
      if (current === info) kept++;
      else fresh.set(info.key, info);
    }
    const changes: ClusterChanges = { pods: [], namespaces: [] };
    for (const [name, after] of labels) {
      const before = this.namespaceLabels.get(name);
      if (before !== after) changes.namespaces.push({ name, before, after });
    }
    for (const [name, before] of this.namespaceLabels) {
      if (!labels.has(name)) changes.namespaces.push({ name, before });
    }
    for (const [key, after] of fresh) changes.pods.push({ before: this.pods.get(key), after });
    const replaced = changes.pods.filter((c) => c.before).length;
    if (kept + replaced < this.pods.size) {
      for (const [key, before] of this.pods) {
        if (before[STAMP] !== epoch && !fresh.has(key)) changes.pods.push({ before });
      }
    }
    this.namespaceLabels = labels;
    for (const c of changes.pods) {
      if (c.after) this.pods.set(c.after.key, c.after);
      else if (c.before) this.pods.delete(c.before.key);
    }
    if (changes.namespaces.length) this.namespaceCache = new Map();
    for (const c of changes.pods) {
      if (c.before) this.byNamespace.get(c.before.namespace)?.delete(c.before.key);
      if (c.after) {
        let list = this.byNamespace.get(c.after.namespace);
        if (!list) this.byNamespace.set(c.after.namespace, (list = new Map<string, PodInfo>()));
        list.set(c.after.key, c.after);
      }
      for (const ns of [c.before?.namespace, c.after?.namespace]) {
        if (ns === undefined) continue;
        this.liveCache.delete(ns);
        this.podCache.delete(ns);
      }
    }
    if (changes.pods.length) this.allLive = undefined;
    this.updateNodes(state.nodes);
    return changes;
  }

  private updateNodes(nodes: readonly Node[]): void {
    const infos = nodes
      .map((n) => nodeInfo(n))
      .sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
    const text = JSON.stringify(infos, (_, v: unknown) => (typeof v === 'bigint' ? `${v}` : v));
    if (text === this.nodesJson) return;
    this.nodes = infos;
    this.nodesJson = text;
    this.nodeCache.clear();
    this.nodesVersion++;
  }

  /** Addresses of the nodes a `nodes` peer selects (their status.addresses that are IPs). */
  nodeAddresses(selector: LabelSelector): PodAddress[] {
    const key = JSON.stringify(selector);
    let hit = this.nodeCache.get(key);
    if (!hit) {
      hit = this.nodes
        .filter((n) => matchesSelector(selector, n.labels))
        .flatMap((n) => n.addresses);
      this.nodeCache.set(key, hit);
    }
    return hit;
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

  /** Every live pod of the cluster, in state order. */
  allLivePods(): PodInfo[] {
    this.allLive ??= [...this.pods.values()].filter((p) => p.live);
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
