// Peers this node does not know yet. An agent learns of a pod on another node some time after
// the pod has its address (the publisher's batch, the watch); NetworkPolicy only allows, so an
// unknown peer is denied anyway. A ClusterNetworkPolicy Deny rule with pod or namespace peers
// would let it through: so such a rule also drops every address of the cluster's pod ranges that
// no live pod of the state has (a pod not known yet, or a pod's address that failed the peer
// address checks). Fail closed: a new pod whose peers deny it by selector is dropped until it is
// known; one that they would not deny waits the same (its first SYN is retransmitted).
import type { Peer } from './state.js';
import { cidrInterval } from './addresses.js';
import type { FamilyIntervals, SetSource } from './sets.js';
import type { RuleAction } from './ir.js';

/** The set cache's key of the pod ranges' set (dropped from the cache when the ranges change). */
export const POD_RANGES_KEY = '\0pod ranges';

/** What the pod ranges' set depends on: no pod and no namespace. */
export const POD_RANGES_SOURCE: SetSource = { namespace: '', peers: [] };

/** A peer that selects every live pod of the cluster: the known pods. */
export const ALL_PODS: Peer[] = [{ namespaceSelector: {} }];

/** Does a rule drop what it does not know? A Deny with a pod or namespace peer does. */
export function deniesUnknown(action: RuleAction | undefined, peers: readonly Peer[]): boolean {
  return action === 'deny' && peers.some((p) => !p.ipBlock);
}

/** The pod ranges as intervals (parseState has checked that each is a CIDR). */
export function podRangeIntervals(ranges: readonly string[]): FamilyIntervals {
  const out: FamilyIntervals = { 4: [], 6: [] };
  for (const r of ranges) {
    const parsed = cidrInterval(r);
    if (parsed) out[parsed.family].push(parsed.interval);
  }
  return out;
}
