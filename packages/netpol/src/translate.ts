// translate(state) → IR: which local pods each NetworkPolicy isolates, and for each of them the
// allow rules of every policy selecting it, with peers and ports resolved into named sets.
// Pure: the same state always gives the same IR. Cost is linear in policies selecting local
// pods × the pods their peers select; selector results and peer sets are computed once.
import { matchesSelector, type Family } from '@flock/api';
import { addressInterval, contains, formatAddress } from './addresses.js';
import { Cluster, type PodInfo } from './cluster.js';
import { fail } from './errors.js';
import type { DirectionIR, LocalPodIR, NetpolIR, RuleIR } from './ir.js';
import {
  NFT_PROTOCOL,
  numericRange,
  portElements,
  resolveNamedPort,
  type PortRange,
} from './ports.js';
import { blockIntervals, invalidate } from './invalidate.js';
import { SetCache, SetRegistry, type FamilyIntervals, type Tuple } from './sets.js';
import type { LocalPod, NetworkPolicy, Peer, PolicyPort, Protocol, State } from './state.js';

type Direction = 'ingress' | 'egress';

interface PolicyView {
  key: string;
  policy: NetworkPolicy;
  ingress: boolean;
  egress: boolean;
}

interface LocalView {
  entry: LocalPod;
  info: PodInfo;
  ingress: PolicyView[];
  egress: PolicyView[];
}

/** Rule of one direction, as the API has it (`from` for ingress, `to` for egress). */
interface RuleView {
  peers: Peer[];
  ports: PolicyPort[];
}

const PROTOCOL_NUMBER: Record<Protocol, number> = { TCP: 6, UDP: 17, SCTP: 132 };

/** policyTypes defaulting of networking.k8s.io/v1: Ingress always, Egress if there are egress rules. */
export function effectiveTypes(policy: NetworkPolicy): { ingress: boolean; egress: boolean } {
  const types = policy.spec.policyTypes;
  if (!types || types.length === 0)
    return { ingress: true, egress: (policy.spec.egress?.length ?? 0) > 0 };
  return { ingress: types.includes('Ingress'), egress: types.includes('Egress') };
}

function rulesOf(policy: NetworkPolicy, direction: Direction): RuleView[] {
  if (direction === 'ingress')
    return (policy.spec.ingress ?? []).map((r) => ({ peers: r.from ?? [], ports: r.ports ?? [] }));
  return (policy.spec.egress ?? []).map((r) => ({ peers: r.to ?? [], ports: r.ports ?? [] }));
}

class Translator {
  private readonly sets: SetRegistry;

  constructor(
    private readonly cluster: Cluster,
    cache: SetCache,
    private readonly peersJson: (peers: Peer[]) => string,
  ) {
    this.sets = new SetRegistry(cache);
  }

  ir(pods: LocalPodIR[]): NetpolIR {
    return {
      pods,
      addressSets: this.sets.addressSets,
      portSets: this.sets.portSets,
      tupleSets: this.sets.tupleSets,
    };
  }

  direction(local: LocalView, direction: Direction): DirectionIR | undefined {
    const policies = local[direction];
    if (policies.length === 0) return undefined;
    const rules: RuleIR[] = [];
    for (const view of policies) {
      rulesOf(view.policy, direction).forEach((rule, index) => {
        rules.push(...this.rule(view, direction, index, rule, local.info));
      });
    }
    return { policies: policies.map((p) => p.key), rules };
  }

  /** The IR rules of one policy rule for one local pod (none when it can match nothing). */
  private rule(
    view: PolicyView,
    direction: Direction,
    index: number,
    rule: RuleView,
    pod: PodInfo,
  ): RuleIR[] {
    // Rules with the same peers share one set, across policies: the key is what the peers
    // mean (their JSON, plus the namespace when a podSelector-only peer refers to it).
    const ownNamespace = rule.peers.some((p) => !p.ipBlock && !p.namespaceSelector);
    const peersKey = `${ownNamespace ? view.policy.metadata.namespace : ''}\0${this.peersJson(rule.peers)}`;
    const comment = `${view.key} ${direction}[${index}]`;
    const source = { namespace: view.policy.metadata.namespace, peers: rule.peers };
    let peers: string | undefined;
    if (rule.peers.length > 0) {
      const name = this.sets.peers(peersKey, comment, source, () =>
        this.peerIntervals(view, rule.peers),
      );
      if (name === null) return [];
      peers = name;
    }
    if (rule.ports.length === 0) return [{ kind: 'allow', comment, ...(peers ? { peers } : {}) }];

    const numeric: PortRange[] = [];
    const named: { name: string; protocol: Protocol }[] = [];
    for (const p of rule.ports) {
      const range = numericRange(p);
      if (range) numeric.push(range);
      else named.push({ name: p.port as string, protocol: p.protocol ?? 'TCP' });
    }
    const out: RuleIR[] = [];
    if (direction === 'ingress') {
      // The destination is this pod: its own containers say what the names mean.
      for (const n of named) {
        for (const port of resolveNamedPort(pod.namedPorts, n.name, n.protocol)) {
          numeric.push({ protocol: n.protocol, lo: port, hi: port });
        }
      }
    } else if (named.length > 0) {
      const tuplesKey = `${peersKey}\0${JSON.stringify(named)}`;
      const tuples = this.sets.tuples(tuplesKey, comment, source, () =>
        this.namedTuples(view, rule.peers, named),
      );
      if (tuples !== null) out.push({ kind: 'tuples', comment, tuples });
    }
    if (numeric.length > 0) {
      const { elements, interval } = portElements(numeric);
      out.unshift({
        kind: 'allow',
        comment,
        ...(peers ? { peers } : {}),
        ports: this.sets.ports(elements, interval),
      });
    }
    return out;
  }

  private peerIntervals(view: PolicyView, peers: Peer[]): FamilyIntervals {
    const out: FamilyIntervals = { 4: [], 6: [] };
    for (const peer of peers) {
      const block = blockIntervals(peer);
      if (block) {
        out[block.family].push(...block.intervals);
        continue;
      }
      for (const pod of this.peerPods(view, peer)) {
        for (const a of pod.addresses) out[a.family].push({ lo: a.n, hi: a.n });
      }
    }
    return out;
  }

  private peerPods(view: PolicyView, peer: Peer): PodInfo[] {
    return this.cluster.selectPeerPods(
      view.policy.metadata.namespace,
      peer.podSelector,
      peer.namespaceSelector,
    );
  }

  /** Egress to named ports: every destination pod's own meaning of each name, per address. */
  private namedTuples(
    view: PolicyView,
    peers: Peer[],
    named: { name: string; protocol: Protocol }[],
  ): Tuple[] {
    // Destination pods, with the addresses of each that the peers allow.
    const destinations = new Map<PodInfo, Set<bigint>>();
    const add = (pod: PodInfo, n: bigint) => {
      let set = destinations.get(pod);
      if (!set) destinations.set(pod, (set = new Set()));
      set.add(n);
    };
    if (peers.length === 0) {
      for (const pod of this.cluster.allLivePods()) for (const a of pod.addresses) add(pod, a.n);
    }
    for (const peer of peers) {
      const block = blockIntervals(peer);
      if (block) {
        for (const pod of this.cluster.allLivePods()) {
          for (const a of pod.addresses) {
            if (
              a.family === block.family &&
              block.intervals.some((iv) => contains(iv, { lo: a.n, hi: a.n }))
            )
              add(pod, a.n);
          }
        }
      } else {
        for (const pod of this.peerPods(view, peer)) for (const a of pod.addresses) add(pod, a.n);
      }
    }
    const tuples: Tuple[] = [];
    for (const [pod, allowed] of destinations) {
      for (const n of named) {
        for (const port of resolveNamedPort(pod.namedPorts, n.name, n.protocol)) {
          for (const a of pod.addresses) {
            if (!allowed.has(a.n)) continue;
            tuples.push({
              family: a.family,
              n: a.n,
              order: PROTOCOL_NUMBER[n.protocol],
              protocol: NFT_PROTOCOL[n.protocol],
              port,
            });
          }
        }
      }
    }
    return tuples;
  }
}

function sourcesOf(cluster: Cluster, local: LocalView): { v4: string[]; v6: string[] } {
  const all: { family: Family; n: bigint }[] = [...local.info.addresses];
  for (const ip of cluster.anycastOf(local.info, local.entry.anycast)) {
    const parsed = addressInterval(ip);
    if (parsed) all.push({ family: parsed.family, n: parsed.interval.lo });
  }
  const text = (family: Family) =>
    [...new Set(all.filter((a) => a.family === family).map((a) => a.n))]
      .sort((a, b) => (a < b ? -1 : a > b ? 1 : 0))
      .map((n) => formatAddress(n, family));
  return { v4: text(4), v6: text(6) };
}

function localViews(state: State, cluster: Cluster): LocalView[] {
  const byInterface = new Map<string, LocalView>();
  const byPod = new Set<string>();
  state.local.forEach((entry, i) => {
    const key = `${entry.namespace}/${entry.name}`;
    const info = cluster.pods.get(key);
    if (!info) fail(`local pod ${key}`, `local[${i}]`, 'no such pod in the state');
    if (byPod.has(key)) fail(`local pod ${key}`, `local[${i}]`, 'listed twice');
    if (byInterface.has(entry.interface))
      fail(
        `local pod ${key}`,
        `local[${i}].interface`,
        `${entry.interface} is used by another local pod`,
      );
    byPod.add(key);
    byInterface.set(entry.interface, { entry, info, ingress: [], egress: [] });
  });
  return [...byInterface.values()].sort((a, b) => (a.entry.interface < b.entry.interface ? -1 : 1));
}

function translateWith(
  state: State,
  cluster: Cluster,
  cache: SetCache,
  peersJson: (peers: Peer[]) => string,
): NetpolIR {
  const locals = localViews(state, cluster);
  const localsByNamespace = new Map<string, LocalView[]>();
  for (const l of locals) {
    const list = localsByNamespace.get(l.info.namespace) ?? [];
    list.push(l);
    localsByNamespace.set(l.info.namespace, list);
  }
  const policies: PolicyView[] = state.policies
    .map((policy) => ({
      key: `${policy.metadata.namespace}/${policy.metadata.name}`,
      policy,
      ...effectiveTypes(policy),
    }))
    .sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
  const seen = new Set<string>();
  for (const view of policies) {
    if (seen.has(view.key)) fail(`networkpolicy ${view.key}`, 'metadata.name', 'listed twice');
    seen.add(view.key);
    if (!cluster.hasNamespace(view.policy.metadata.namespace)) {
      fail(
        `networkpolicy ${view.key}`,
        'metadata.namespace',
        "namespace is not in the state's namespaces",
      );
    }
    for (const local of localsByNamespace.get(view.policy.metadata.namespace) ?? []) {
      if (!matchesSelector(view.policy.spec.podSelector, local.info.labels)) continue;
      if (view.ingress) local.ingress.push(view);
      if (view.egress) local.egress.push(view);
    }
  }
  const translator = new Translator(cluster, cache, peersJson);
  const pods = locals.map((local): LocalPodIR => {
    const ingress = translator.direction(local, 'ingress');
    const egress = translator.direction(local, 'egress');
    return {
      pod: local.info.key,
      interface: local.entry.interface,
      sources: sourcesOf(cluster, local),
      ...(ingress ? { ingress } : {}),
      ...(egress ? { egress } : {}),
    };
  });
  return translator.ir(pods);
}

/**
 * translate() that keeps what it computed for the next state: the parsed pods (by object), the
 * selector results and the set contents, so that a change costs what it touches — a pod change
 * recomputes only the sets that select the pod. The IR is exactly translate()'s for the same
 * state (a property test holds the two together). Objects of a state are read as immutable:
 * pass a new object for whatever changed, as the agent's caches do.
 */
export class IncrementalTranslator {
  private cluster: Cluster | undefined;
  private readonly cache = new SetCache();
  private readonly json = new WeakMap<Peer[], string>();

  translate(state: State): NetpolIR {
    try {
      if (!this.cluster) this.cluster = new Cluster(state);
      else invalidate(this.cache, this.cluster.update(state), this.cluster.namespaceLabels);
      return translateWith(state, this.cluster, this.cache, this.peersJson);
    } catch (error) {
      this.reset();
      throw error;
    }
  }

  /** Forget everything: the next state is translated from scratch. */
  reset(): void {
    this.cluster = undefined;
    this.cache.clear();
  }

  private readonly peersJson = (peers: Peer[]): string => {
    let hit = this.json.get(peers);
    if (hit === undefined) this.json.set(peers, (hit = JSON.stringify(peers)));
    return hit;
  };
}

/** The policy IR of this node's pods. Throws NetpolError on input it cannot enforce. */
export function translate(state: State): NetpolIR {
  return translateWith(state, new Cluster(state), new SetCache(), (peers) => JSON.stringify(peers));
}
