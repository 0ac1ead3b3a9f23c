// NodeConfig status as the agent reports it, computed from what the agent knows: the
// NodeConfig in use, what BIRD was given and says about its sessions, the allocations, and what
// the NetworkPolicy engine last reported. Pure: the reporter decides when to write.
//
// Conditions:
//   Ready           True while the agent runs with a usable NodeConfig and BIRD accepts the
//                   model; False NodeConfigUnusable / BgpConfigInvalid / BirdConfigRefused.
//   BGPEstablished  True when every peer is Established; False listing the ones that are not
//                   (or BirdUnavailable / BirdReloadFailed); Unknown NoPeers without peers.
//                   A peer BIRD runs with the last password read, because its Secret cannot
//                   be read now, is named in the message (and in its bgpPeers info).
//   PolicyApplied   what the policy engine reported through setPolicy(); Unknown NotReported
//                   until then.
import {
  NodeConfigConditions,
  NodeConfigStatus,
  PodIpv4Mode,
  podIpv4Mode,
  setCondition,
  type Condition,
  type ConditionInput,
  type NodeConfigSpec,
} from '@flock/api';
import { peerStatuses, peerProtocolName, type BirdPeer } from '@flock/bird';
import type { AllocationEntry } from '../store/index.js';
import type { AnnouncerState } from '../routing/announcer.js';
import type { PeerProblem } from '../routing/peer-secrets.js';
import type { BgpObservation } from '../routing/session-poll.js';

/** What the NetworkPolicy engine reports (NodeConfig condition PolicyApplied). */
export interface PolicyReport {
  ok: boolean;
  message: string;
  /** One CamelCase word; default PolicyApplied / PolicyFailed. */
  reason?: string;
}

export interface StatusInputs {
  generation?: number;
  /** Why this node's NodeConfig cannot be used; undefined when it is in use. */
  unusable?: string;
  announcer: AnnouncerState;
  /** The NodeConfig's peers, in its order. */
  configuredPeers: readonly { address: string; asn: number }[];
  /** The peers given to BIRD. */
  peers: readonly BirdPeer[];
  peerProblems: readonly PeerProblem[];
  /** Peers BIRD runs with the last password read: their Secret cannot be read now. */
  stalePasswords?: readonly PeerProblem[];
  /** BIRD's protocols from the last poll; undefined before the first poll. */
  bgp: BgpObservation | undefined;
  entries: readonly AllocationEntry[];
  /** The NodeConfig's IPv4 slice and mode: which pod addresses are private. */
  ipv4Node?: Pick<NodeConfigSpec, 'cidr4' | 'ipv4' | 'nat64'>;
  anycastAnnounced: number;
  advertisedRoutes?: number;
  policy?: PolicyReport;
  agentVersion?: string;
}

export type PeerStatus = NonNullable<NodeConfigStatus['bgpPeers']>[number];

export function bgpPeerStatuses(inputs: StatusInputs): PeerStatus[] {
  const problems = new Map(inputs.peerProblems.map((p) => [p.address, p]));
  const stalePassword = new Map((inputs.stalePasswords ?? []).map((p) => [p.address, p]));
  const fromBird =
    inputs.bgp && 'protocols' in inputs.bgp
      ? new Map(peerStatuses(inputs.peers, inputs.bgp.protocols).map((s) => [s.address, s]))
      : undefined;
  return inputs.configuredPeers.map((peer): PeerStatus => {
    const problem = problems.get(peer.address);
    if (problem)
      return {
        address: peer.address,
        asn: peer.asn,
        state: 'NotConfigured',
        info: problem.message,
      };
    const seen = fromBird?.get(peer.address);
    const stale = stalePassword.get(peer.address);
    if (seen && stale)
      return { ...seen, info: seen.info ? `${seen.info}; ${stale.message}` : stale.message };
    if (seen) return seen;
    return {
      address: peer.address,
      asn: peer.asn,
      protocol: peerProtocolName(peer.address),
      state: 'Unknown',
      info: inputs.bgp && 'error' in inputs.bgp ? inputs.bgp.error : 'BIRD not asked yet',
    };
  });
}

function readyCondition(inputs: StatusInputs): ConditionInput {
  const c = (status: 'True' | 'False', reason: string, message: string): ConditionInput => ({
    type: NodeConfigConditions.Ready,
    status,
    reason,
    message,
  });
  if (inputs.unusable) return c('False', 'NodeConfigUnusable', inputs.unusable);
  const a = inputs.announcer;
  if (a.status === 'invalid') return c('False', 'BgpConfigInvalid', a.message);
  if (a.status === 'refused') return c('False', 'BirdConfigRefused', a.message);
  return c('True', 'AgentReady', 'the flock agent runs with this NodeConfig');
}

function bgpCondition(inputs: StatusInputs, peers: PeerStatus[]): ConditionInput {
  const c = (status: Condition['status'], reason: string, message: string): ConditionInput => ({
    type: NodeConfigConditions.BGPEstablished,
    status,
    reason,
    message,
  });
  if (!inputs.configuredPeers.length) return c('Unknown', 'NoPeers', 'this node has no BGP peers');
  const a = inputs.announcer;
  if (a.status === 'unreachable')
    return c('False', 'BirdUnavailable', `BIRD is not answering: ${a.message}`);
  if (a.status === 'failed')
    return c('False', 'BirdReloadFailed', `reloading BIRD failed: ${a.message}`);
  if (inputs.bgp && 'error' in inputs.bgp)
    return c('False', 'BirdUnavailable', `BIRD is not answering: ${inputs.bgp.error}`);
  const down = peers.filter((p) => p.state !== 'Established');
  const stale = (inputs.stalePasswords ?? []).map((p) => p.address);
  const unread = stale.length
    ? `; the password Secret of ${stale.join(', ')} cannot be read, BIRD keeps the last password read`
    : '';
  if (!down.length)
    return c(
      'True',
      'AllPeersEstablished',
      `all ${peers.length} BGP sessions are established${unread}`,
    );
  const list = down.map((p) => `${p.address} ${p.state}${p.info ? ` (${p.info})` : ''}`);
  return c(
    'False',
    'PeersNotEstablished',
    `${down.length} of ${peers.length} BGP sessions not established: ${list.join('; ')}${unread}`,
  );
}

function policyCondition(policy: PolicyReport | undefined): ConditionInput {
  const type = NodeConfigConditions.PolicyApplied;
  if (!policy)
    return {
      type,
      status: 'Unknown',
      reason: 'NotReported',
      message: 'the NetworkPolicy engine has not reported yet',
    };
  return {
    type,
    status: policy.ok ? 'True' : 'False',
    reason: policy.reason ?? (policy.ok ? 'PolicyApplied' : 'PolicyFailed'),
    message: policy.message,
  };
}

/** The status to write; `previous` conditions keep their lastTransitionTime when unchanged. */
export function computeNodeStatus(
  inputs: StatusInputs,
  previous: readonly Condition[] | undefined,
  now: Date = new Date(),
): NodeConfigStatus {
  const peers = bgpPeerStatuses(inputs);
  const generation = inputs.generation;
  let conditions = [...(previous ?? [])].filter((c) =>
    Object.values(NodeConfigConditions).includes(c.type as never),
  );
  for (const next of [
    readyCondition(inputs),
    bgpCondition(inputs, peers),
    policyCondition(inputs.policy),
  ]) {
    conditions = setCondition(
      conditions,
      generation === undefined ? next : { ...next, observedGeneration: generation },
      now,
    );
  }
  const order = Object.values(NodeConfigConditions) as string[];
  conditions.sort((a, b) => order.indexOf(a.type) - order.indexOf(b.type));
  const committed = inputs.entries.filter((e) => e.state === 'committed');
  const status: NodeConfigStatus = {
    ...(generation === undefined ? {} : { observedGeneration: generation }),
    conditions,
    allocations: {
      pods: new Set(committed.map((e) => `${e.namespace}/${e.pod}/${e.podUID}`)).size,
      ipv6: committed.length,
      ipv4: committed.filter((e) => e.ip4).length,
      ipv4Modes: countIpv4Modes(committed, inputs.ipv4Node ?? {}),
      pinned: committed.filter((e) => e.pinned).length,
      anycast: inputs.anycastAnnounced,
    },
    bgpPeers: peers,
    ...(inputs.advertisedRoutes === undefined ? {} : { advertisedRoutes: inputs.advertisedRoutes }),
    ...(inputs.agentVersion ? { agentVersion: inputs.agentVersion } : {}),
  };
  return NodeConfigStatus.parse(status);
}

/** JSON with sorted keys: equal statuses give equal text whatever their key order. */
export function stableJson(value: unknown): string {
  return JSON.stringify(value, (_key, v: unknown) =>
    v && typeof v === 'object' && !Array.isArray(v)
      ? Object.fromEntries(Object.entries(v).sort(([a], [b]) => a.localeCompare(b)))
      : v,
  );
}

/** Committed pods by IPv4 mode, in one pass. */
function countIpv4Modes(
  committed: readonly { ip4?: string | undefined }[],
  node: Parameters<typeof podIpv4Mode>[1],
): Record<PodIpv4Mode, number> {
  const counts = Object.fromEntries(PodIpv4Mode.options.map((m) => [m, 0])) as Record<
    PodIpv4Mode,
    number
  >;
  for (const e of committed) counts[podIpv4Mode(e, node)]++;
  return counts;
}
