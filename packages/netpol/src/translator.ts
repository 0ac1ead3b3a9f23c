// The rule half of translate(): one policy rule of one direction, for one local pod, as IR rules
// whose peers, ports and named-port tuples are resolved into named sets (shared by every rule
// with the same meaning, and kept across states in a SetCache). NetworkPolicy and
// ClusterNetworkPolicy rules both come here as a RuleView: peers in NetworkPolicy's terms
// (podSelector / namespaceSelector / ipBlock), plus node selectors, and ports.
import type { Family, LabelSelector, Protocol } from '@flock/api';
import { cidrInterval, contains, subtractIntervals, type Interval } from './addresses.js';
import type { Cluster, PodAddress, PodInfo } from './cluster.js';
import type { NetpolIR, LocalPodIR, RuleAction, RuleIR } from './ir.js';
import {
  NFT_PROTOCOL,
  numericRange,
  portElements,
  resolveNamedPort,
  type PortRange,
} from './ports.js';
import {
  SetRegistry,
  type FamilyIntervals,
  type SetCache,
  type SetSource,
  type Tuple,
} from './sets.js';
import type { Peer, PolicyPort } from './state.js';
import {
  ALL_PODS,
  deniesUnknown,
  POD_RANGES_KEY,
  POD_RANGES_SOURCE,
  podRangeIntervals,
} from './unknown-peers.js';

export type Direction = 'ingress' | 'egress';

/** One rule of one direction: `from` for ingress, `to` for egress. */
export interface RuleView {
  /** undefined: any address (NetworkPolicy's absent or empty `from`/`to`). */
  peers: Peer[] | undefined;
  /** ClusterNetworkPolicy `nodes` peers: the addresses of the nodes they select. */
  nodes?: LabelSelector[];
  ports: PolicyPort[];
}

/** Whose rule it is: `ns/name` (or a cluster policy's name) and the namespace it is read in. */
export interface RuleOwner {
  key: string;
  namespace: string;
}

const PROTOCOL_NUMBER: Record<Protocol, number> = { TCP: 6, UDP: 17, SCTP: 132 };

/** A rule's set keys and ports, which do not depend on the local pod it is emitted for. */
export interface RulePlan {
  direction: Direction;
  comment: string;
  action?: RuleAction;
  /** undefined: any address. */
  peers?: { key: string; compute: () => FamilyIntervals };
  source: SetSource;
  /** No ports: any port. */
  anyPort: boolean;
  numeric: PortRange[];
  /** Named ports: resolved on the pod (ingress) or per destination in a tuple set (egress). */
  named: { name: string; protocol: Protocol }[];
  tuples?: { key: string; compute: () => Tuple[] };
  /** A Deny by pod or namespace: it also drops the pod ranges' unknown addresses. */
  unknown: boolean;
}

/** An ipBlock as intervals of one family (cidr minus except). */
export function blockIntervals(peer: Peer): { family: Family; intervals: Interval[] } | undefined {
  if (!peer.ipBlock) return undefined;
  const base = cidrInterval(peer.ipBlock.cidr);
  if (!base) return undefined; // parseState refuses such a block
  const cuts = (peer.ipBlock.except ?? []).flatMap((c) => {
    const cut = cidrInterval(c);
    return cut && cut.family === base.family ? [cut.interval] : [];
  });
  return { family: base.family, intervals: subtractIntervals(base.interval, cuts) };
}

/**
 * Told what a peer set holds, part by part (an address may be told more than once). Lists, not
 * single addresses: the loops over a big set's pods are the caller's own.
 */
export interface SourceVisitor {
  /** Its fixed addresses (a ClusterNetworkPolicy's `nodes` peers). */
  fixed(addresses: readonly PodAddress[]): void;
  /** An ipBlock's addresses. */
  block(family: Family, intervals: readonly Interval[]): void;
  /** The live pods one selector peer selects: their addresses. */
  pods(pods: readonly PodInfo[]): void;
  /** Go on to the next selector peer's pods? Absent: always. */
  more?(): boolean;
}

/**
 * What a peer set built from `source` holds in `cluster`'s current state: its fixed addresses,
 * its ipBlocks, then the live pods each selector peer selects (read in the source's namespace).
 * The one definition behind a set computed (sourceIntervals) and a cached one edited
 * (invalidate.ts: what a change takes away is what this no longer tells).
 */
export function visitSource(
  cluster: Pick<Cluster, 'selectPeerPods'>,
  source: SetSource,
  visit: SourceVisitor,
): void {
  if (source.fixed) visit.fixed(source.fixed);
  for (const peer of source.peers) {
    const block = blockIntervals(peer);
    if (block) visit.block(block.family, block.intervals);
  }
  for (const peer of source.peers) {
    if (peer.ipBlock) continue;
    if (visit.more && !visit.more()) return;
    visit.pods(cluster.selectPeerPods(source.namespace, peer.podSelector, peer.namespaceSelector));
  }
}

/** The addresses of a peer set built from `source`, as intervals (the registry merges them). */
function sourceIntervals(cluster: Cluster, source: SetSource): FamilyIntervals {
  const out: FamilyIntervals = { 4: [], 6: [] };
  visitSource(cluster, source, {
    fixed: (addresses) => {
      for (const a of addresses) out[a.family].push({ lo: a.n, hi: a.n });
    },
    block: (family, intervals) => out[family].push(...intervals),
    pods: (pods) => {
      for (const pod of pods)
        for (const a of pod.addresses) out[a.family].push({ lo: a.n, hi: a.n });
    },
  });
  return out;
}

const peerPods = (cluster: Cluster, owner: RuleOwner, peer: Peer): PodInfo[] =>
  cluster.selectPeerPods(owner.namespace, peer.podSelector, peer.namespaceSelector);

/** Egress to named ports: every destination pod's own meaning of each name, per address. */
function namedTuples(
  cluster: Cluster,
  owner: RuleOwner,
  peers: Peer[] | undefined,
  named: { name: string; protocol: Protocol }[],
): Tuple[] {
  // Destination pods, with the addresses of each that the peers allow.
  const destinations = new Map<PodInfo, Set<bigint>>();
  const add = (pod: PodInfo, n: bigint) => {
    let set = destinations.get(pod);
    if (!set) destinations.set(pod, (set = new Set()));
    set.add(n);
  };
  if (peers === undefined) {
    for (const pod of cluster.allLivePods()) for (const a of pod.addresses) add(pod, a.n);
  }
  for (const peer of peers ?? []) {
    const block = blockIntervals(peer);
    if (block) {
      for (const pod of cluster.allLivePods()) {
        for (const a of pod.addresses) {
          if (
            a.family === block.family &&
            block.intervals.some((iv) => contains(iv, { lo: a.n, hi: a.n }))
          )
            add(pod, a.n);
        }
      }
    } else {
      for (const pod of peerPods(cluster, owner, peer))
        for (const a of pod.addresses) add(pod, a.n);
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

export class Translator {
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

  /** The IR rules of one policy rule for one local pod (none when it can match nothing). */
  rule(
    owner: RuleOwner,
    direction: Direction,
    comment: string,
    rule: RuleView,
    pod: PodInfo,
    action?: RuleAction,
  ): RuleIR[] {
    return this.emit(this.plan(owner, direction, comment, rule, action), pod);
  }

  /** What rule() computes before it looks at the pod (a plan stays valid until nodes change). */
  plan(
    owner: RuleOwner,
    direction: Direction,
    comment: string,
    rule: RuleView,
    action?: RuleAction,
  ): RulePlan {
    const cluster = this.cluster;
    const selectorPeers = rule.peers ?? [];
    const nodes = rule.nodes ?? [];
    // Rules with the same peers share one set, across policies: the key is what the peers
    // mean (their JSON, plus the namespace when a podSelector-only peer refers to it, plus the
    // node addresses when nodes are peers).
    const ownNamespace = selectorPeers.some((p) => !p.ipBlock && !p.namespaceSelector);
    const nodeAddresses = nodes.flatMap((s) => cluster.nodeAddresses(s));
    const nodeKey = nodes.length
      ? `\0nodes ${nodeAddresses.map((a) => `${a.family}:${a.n}`).join(',')}`
      : '';
    const peersKey = `${ownNamespace ? owner.namespace : ''}\0${this.peersJson(selectorPeers)}${nodeKey}`;
    const numeric: PortRange[] = [];
    const named: { name: string; protocol: Protocol }[] = [];
    for (const p of rule.ports) {
      const range = numericRange(p);
      if (range) numeric.push(range);
      else named.push({ name: p.port as string, protocol: p.protocol ?? 'TCP' });
    }
    const source: SetSource = {
      namespace: owner.namespace,
      peers: selectorPeers,
      ...(nodeAddresses.length ? { fixed: nodeAddresses } : {}),
    };
    const peers =
      rule.peers !== undefined || nodes.length > 0
        ? { key: peersKey, compute: () => sourceIntervals(cluster, source) }
        : undefined;
    const tuples =
      direction === 'egress' && named.length > 0
        ? {
            key: `${peersKey}\0${JSON.stringify(named)}`,
            compute: () => namedTuples(cluster, owner, rule.peers, named),
          }
        : undefined;
    return {
      direction,
      comment,
      ...(action ? { action } : {}),
      ...(peers ? { peers } : {}),
      source,
      anyPort: rule.ports.length === 0,
      numeric,
      named,
      ...(tuples ? { tuples } : {}),
      unknown: deniesUnknown(action, selectorPeers),
    };
  }

  /** A plan's IR rules for one local pod: its sets named (in order of first use) and its ports. */
  emit(plan: RulePlan, pod: PodInfo): RuleIR[] {
    const { comment, source } = plan;
    const act = plan.action ? { action: plan.action } : {};
    // The rule's destination ports as a port set, resolved once for the rule and its drop of
    // unknown peers (null: this pod has none of them); registered only when a rule uses it.
    let portSet: string | null | undefined;
    const ports = () =>
      portSet === undefined ? (portSet = this.portSet(destinationPorts(plan, pod))) : portSet;
    let peers: string | undefined;
    if (plan.peers) {
      const name = this.sets.peers(plan.peers.key, comment, source, plan.peers.compute);
      // No address: the rule matches nothing (a Deny still matches the unknown ones).
      if (name === null) return plan.unknown ? this.unknownRules(plan, ports) : [];
      peers = name;
    }
    const out: RuleIR[] = [];
    if (plan.anyPort) {
      out.push({ kind: 'allow', comment, ...(peers ? { peers } : {}), ...act });
    } else {
      const set = ports();
      if (set !== null)
        out.push({ kind: 'allow', comment, ...(peers ? { peers } : {}), ports: set, ...act });
      if (plan.tuples) {
        const tuples = this.sets.tuples(plan.tuples.key, comment, source, plan.tuples.compute);
        if (tuples !== null) out.push({ kind: 'tuples', comment, tuples, ...act });
      }
    }
    if (plan.unknown) out.push(...this.unknownRules(plan, ports));
    return out;
  }

  /** The port set of these ports (shared by every rule with the same); null for none. */
  private portSet(numeric: PortRange[]): string | null {
    if (numeric.length === 0) return null;
    const { elements, interval } = portElements(numeric);
    return this.sets.ports(elements, interval);
  }

  /**
   * A Deny rule's drop of unknown peers (unknown-peers.ts): the pod ranges minus every live pod,
   * on the rule's ports. An unknown destination's named ports are unknown too: any port.
   */
  private unknownRules(plan: RulePlan, ports: () => string | null): RuleIR[] {
    const cluster = this.cluster;
    const ranges = this.sets.peers(POD_RANGES_KEY, 'pod ranges', POD_RANGES_SOURCE, () =>
      podRangeIntervals(cluster.podRanges),
    );
    if (ranges === null) return [];
    const live: SetSource = { namespace: '', peers: ALL_PODS };
    const known = this.sets.peers(`\0${this.peersJson(ALL_PODS)}`, 'live pods', live, () =>
      sourceIntervals(cluster, live),
    );
    const rule: RuleIR = {
      kind: 'allow',
      comment: `${plan.comment} unknown peers`,
      peers: ranges,
      ...(known ? { except: known } : {}),
      action: 'deny',
    };
    if (plan.anyPort || (plan.direction === 'egress' && plan.named.length > 0)) return [rule];
    const set = ports();
    return set === null ? [] : [{ ...rule, ports: set }]; // null: this pod has none of the ports
  }
}

/** A rule's numeric ports; for ingress with its named ports as this pod's containers define them. */
function destinationPorts(plan: RulePlan, pod: PodInfo): PortRange[] {
  if (plan.direction !== 'ingress' || plan.named.length === 0) return plan.numeric;
  const numeric = [...plan.numeric];
  for (const n of plan.named)
    for (const port of resolveNamedPort(pod.namedPorts, n.name, n.protocol))
      numeric.push({ protocol: n.protocol, lo: port, hi: port });
  return numeric;
}
