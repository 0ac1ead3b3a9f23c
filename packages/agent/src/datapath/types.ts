// The datapath's public contract: what the agent asks of the kernel, and what it gets back.
import type { CniResult } from '@flock/api';

/** The step of an operation that failed; a CNI error names it. */
export type DatapathStep =
  | 'validate'
  | 'read-host'
  | 'read-pod'
  | 'create-veth'
  | 'host-link'
  | 'host-addresses'
  | 'host-routes'
  | 'pod-link'
  | 'pod-addresses'
  | 'pod-neighbours'
  | 'pod-routes'
  | 'pod-anycast'
  | 'delete-veth'
  | 'blackholes'
  | 'anycast-route';

export class DatapathError extends Error {
  constructor(
    readonly step: DatapathStep,
    message: string,
    options?: { cause?: unknown },
  ) {
    super(`${step}: ${message}`, options);
    this.name = 'DatapathError';
  }
}

export interface PodSpec {
  containerID: string;
  /** Interface name inside the pod, usually eth0. */
  ifName: string;
  /** Path of the pod's network namespace (/var/run/netns/cni-…, /proc/PID/ns/net). */
  netns: string;
  /** Host-side veth name; normally hostVethName(containerID, ifName). Must start with "flock". */
  hostVeth: string;
  ip6: string;
  ip4?: string;
  /** Addresses the pod serves as anycast, put on the pod's lo. */
  anycast?: string[];
  mtu?: number;
}

export interface PodTeardownSpec {
  containerID: string;
  ifName: string;
  /** When given and still present, flock's anycast addresses are removed from the pod's lo. */
  netns?: string;
  hostVeth: string;
  ip6?: string;
  ip4?: string;
  anycast?: string[];
  /**
   * The caller's store vouches that no other allocation has a veth of this name or these
   * addresses: whatever veth has the name, and any flock route to the addresses, is this pod's.
   * The teardown then deletes in one batch without reading first (one `ip` process, not two).
   */
  exclusive?: boolean;
}

type CniInterfaces = NonNullable<CniResult['interfaces']>;
type CniIps = NonNullable<CniResult['ips']>;
type CniRoutes = NonNullable<CniResult['routes']>;

export interface PodSetupResult {
  hostVeth: string;
  hostMac: string;
  podMac: string;
  /** CNI result pieces: [host veth, pod interface]; ips refer to interface index 1. */
  interfaces: CniInterfaces;
  ips: CniIps;
  routes: CniRoutes;
  /** True when this call created the veth (false: it existed and was reconciled). */
  created: boolean;
}

export interface PodTeardownResult {
  /** The host veth existed, was flock's for this pod, and is gone now. */
  deletedVeth: boolean;
  /** A veth of that name exists but belongs to someone else (its MAC is not this pod's). */
  notOwned: boolean;
  /** Leftover flock host routes for the pod's addresses that were removed. */
  removedRoutes: string[];
}

export type FindingKind =
  | 'host-veth-missing'
  | 'host-veth-not-paired'
  | 'host-veth-down'
  | 'host-mtu-wrong'
  | 'host-address-missing'
  | 'host-route-missing'
  | 'host-route-wrong'
  | 'pod-netns-missing'
  | 'pod-interface-missing'
  | 'pod-interface-down'
  | 'pod-mtu-wrong'
  | 'pod-lo-down'
  | 'pod-address-missing'
  | 'pod-address-unexpected'
  | 'pod-neighbour-missing'
  | 'pod-neighbour-wrong'
  | 'pod-route-missing'
  | 'pod-route-wrong'
  | 'pod-anycast-missing';

/** One difference between what the kernel holds and what the pod should have. */
export interface Finding {
  kind: FindingKind;
  /** The object concerned: an address, a route destination, an interface name. */
  object: string;
  message: string;
}

export interface Nexthop {
  dev: string;
  gateway?: string;
}

export interface PodVeth {
  name: string;
  ifindex: number;
  mac: string;
  up: boolean;
  mtu: number;
  addresses: string[];
  /** Destinations of flock pod routes through this veth (the pod's /128 and /32). */
  routes: string[];
}

export interface FlockRoute {
  kind: 'pod' | 'blackhole' | 'anycast';
  dst: string;
  nexthops: Nexthop[];
}

export interface AnycastRoute {
  ip: string;
  /** Host veths of the nexthops, sorted. */
  hostVeths: string[];
}

export interface EnsureAnycastResult {
  changed: boolean;
  /** The veths the route now goes through, sorted. */
  hostVeths: string[];
  /** Veths left out: they carry no flock pod route (gone, or not set up yet). */
  skipped: { hostVeth: string; reason: string }[];
}

export interface EnsureBlackholesResult {
  added: string[];
  removed: string[];
}

export interface SysctlResult {
  key: string;
  value: string;
  /** The key has the value now (it had it already, or it was written). */
  ok: boolean;
  /** It had another value and was written; false when it already had the value. */
  changed: boolean;
  /** Why it does not have the value (with the value it has, when it could be read). */
  error?: string;
}

/** The node agent's kernel layer. Every operation is idempotent. */
export interface Datapath {
  setupPod(spec: PodSpec): Promise<PodSetupResult>;
  teardownPod(spec: PodTeardownSpec): Promise<PodTeardownResult>;
  /** Drift between the kernel and the pod's spec; empty when all is right. */
  checkPod(spec: PodSpec): Promise<Finding[]>;
  listPodVeths(): Promise<PodVeth[]>;
  /** Delete a flock veth that no allocation accounts for (a crash before the pending write). */
  deleteStrayVeth(name: string): Promise<boolean>;
  listFlockRoutes(): Promise<FlockRoute[]>;
  ensureBlackholes(cidrs: string[]): Promise<EnsureBlackholesResult>;
  ensureAnycastRoute(ip: string, hostVeths: string[]): Promise<EnsureAnycastResult>;
  listAnycastRoutes(): Promise<AnycastRoute[]>;
  applyHostSysctls(): Promise<SysctlResult[]>;
}
