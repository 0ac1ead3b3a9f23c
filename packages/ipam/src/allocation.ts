// The allocator's vocabulary: options, requests, allocations and the errors it returns.
import type { Family, IpAlgo, PinnedAddresses } from '@flock/api';
import type { RandomBytes } from './interface-id.js';

/** Released addresses wait this long before reuse: routers, conntrack and DNS caches forget them. */
export const DEFAULT_ADDRESS_QUARANTINE_MS = 5 * 60 * 1000;
/**
 * The share of a node prefix one namespace may keep quarantined. Past it, its oldest quarantine
 * ends early: a namespace churning pods through a node cannot leave no address for the others.
 */
export const DEFAULT_QUARANTINE_SHARE = 0.25;

/** Who holds or released an address: "namespace/name" of the pod (quarantine and `stable`). */
export const holderIdentity = (namespace: string, name: string) => `${namespace}/${name}`;

/** An address released by a pod and quarantined until `until` (ISO time): not handed out before. */
export interface ReleasedAddress {
  ip: string;
  /** holderIdentity of the pod that released it (it may take it back, see ip-algo stable). */
  identity: string;
  pinned: boolean;
  until: string;
}

export interface AllocatorOptions {
  /** The node's IPv6 prefix (at most /120). */
  cidr6: string;
  /** The node's IPv4 slice (at most /30), if the pool has IPv4. */
  cidr4?: string;
  /** The pool's pinned ranges: the only place a pinned address may come from. */
  pinnedCIDRs?: readonly string[];
  quarantineMs?: number;
  /** DEFAULT_QUARANTINE_SHARE when unset; 1: no bound. */
  quarantineShare?: number;
  /** Clock in epoch milliseconds (default steadyNow; tests inject one). */
  now?: () => number;
  randomBytes?: RandomBytes;
}

export interface AllocationRequest {
  /** Key of the allocation; the agent uses the container ID and interface name. */
  owner: string;
  namespace: string;
  name: string;
  /** IPv6 interface-ID algorithm (default random). */
  algo?: IpAlgo;
  pinned?: PinnedAddresses;
  /**
   * An IPv4 address from the node's slice (default true when the node has one); false: IPv6
   * only (a pinned IPv4 address is still taken).
   */
  ipv4?: boolean;
}

export interface Allocation {
  owner: string;
  namespace: string;
  name: string;
  ip6: string;
  ip4?: string;
  /** At least one of the addresses was pinned. */
  pinned: boolean;
}

export type AllocationErrorCode =
  | 'Exhausted'
  | 'InvalidAddress'
  | 'OutOfRange'
  | 'PinnedOutsideRanges'
  | 'PinnedReserved'
  | 'PinnedInUse'
  | 'PinnedQuarantined'
  | 'Conflict';

export interface FamilyCounts {
  prefix: string;
  /** Addresses of the prefix that may be handed out (reserved ones excluded). */
  usable: bigint;
  allocated: number;
  quarantined: number;
  free: bigint;
  /** Quarantines ended early since start: a namespace reached its share (quarantineShare). */
  quarantineCut: number;
}

export interface AllocationError {
  code: AllocationErrorCode;
  message: string;
  family?: Family;
  /** With Exhausted: the state of the exhausted prefix. */
  counts?: FamilyCounts;
}

export type AllocationResult =
  { ok: true; value: Allocation } | { ok: false; error: AllocationError };
