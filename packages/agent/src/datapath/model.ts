// The part of a network namespace the datapath reads and writes, as plain data, and the
// changes it makes to it. The real kernel is read into this model (iproute-json.ts) and the
// changes are rendered as `ip -batch` lines (commands.ts); the in-memory kernel
// (memory-kernel.ts) holds the model itself and applies the changes with the kernel's rules.
import type { Family } from '@flock/api';
import type { DatapathStep, Nexthop } from './types.js';

export const SCOPE_GLOBAL = 0;
export const SCOPE_LINK = 253;
export const SCOPE_HOST = 254;

export interface NsAddress {
  /** address/prefixlen, canonical. */
  cidr: string;
  family: Family;
  scope: number;
  nodad: boolean;
}

export interface NsLink {
  name: string;
  ifindex: number;
  /** Link kind from IFLA_INFO_KIND ("veth"); undefined for lo and kinds without one. */
  kind?: string;
  mac: string;
  /** Administratively up. */
  up: boolean;
  mtu: number;
  /** Index of the veth peer, in the peer's namespace. */
  peerIfindex?: number;
  addresses: NsAddress[];
}

export type RouteType = 'unicast' | 'blackhole' | 'other';

/** A route of the main table. Routes the kernel derives from addresses are not modelled. */
export interface NsRoute {
  /** address/prefixlen, canonical ("::/0" and "0.0.0.0/0" for default). */
  dst: string;
  family: Family;
  type: RouteType;
  proto: number;
  metric: number;
  /** One entry for a plain route, several for multipath, none for a blackhole. */
  nexthops: Nexthop[];
}

export interface NsNeighbour {
  dev: string;
  ip: string;
  mac?: string;
  permanent: boolean;
}

export interface NsState {
  links: NsLink[];
  routes: NsRoute[];
  neighbours: NsNeighbour[];
}

/** What to read: the real kernel reads only this; the in-memory kernel returns only this. */
export interface ReadQuery {
  links?: 'all' | { names: string[] } | { kind: 'veth' };
  /** Routes matching any of: a protocol, or exactly one of the destinations. */
  routes?: 'all' | { protos?: number[]; exact?: string[] };
  neighbours?: boolean;
}

/** Where a change or a read happens: the node (host) namespace, or a pod's namespace by path. */
export type NsRef = { kind: 'host' } | { kind: 'pod'; netns: string };
export const HOST: NsRef = { kind: 'host' };
export const podNs = (netns: string): NsRef => ({ kind: 'pod', netns });

export interface RouteSpec {
  dst: string;
  type: 'unicast' | 'blackhole';
  proto: number;
  nexthops: Nexthop[];
}

export type Action =
  | {
      op: 'veth-add';
      step: DatapathStep;
      name: string;
      mac: string;
      mtu?: number;
      peer: { name: string; mac: string; netns: string };
    }
  | {
      op: 'link-set';
      step: DatapathStep;
      name: string;
      up?: boolean;
      addrGenNone?: boolean;
      mtu?: number;
    }
  | { op: 'link-del'; step: DatapathStep; name: string }
  | {
      op: 'addr-replace';
      step: DatapathStep;
      dev: string;
      cidr: string;
      nodad?: boolean;
      scope?: 'host';
    }
  | { op: 'addr-del'; step: DatapathStep; dev: string; cidr: string }
  | { op: 'neigh-replace'; step: DatapathStep; dev: string; ip: string; mac: string }
  | { op: 'route-replace'; step: DatapathStep; route: RouteSpec }
  | { op: 'route-del'; step: DatapathStep; route: RouteSpec };

export const emptyState = (): NsState => ({ links: [], routes: [], neighbours: [] });

export function familyOfCidr(cidr: string): Family {
  return cidr.includes(':') ? 6 : 4;
}

/** The kernel's default metric of a route we add without one. */
export function defaultMetric(family: Family): number {
  return family === 6 ? 1024 : 0;
}

const nexthopKey = (n: Nexthop) => `${n.dev}|${n.gateway ?? ''}`;

/** Nexthops in a stable order (by device, then gateway). */
export function sortNexthops(list: Nexthop[]): Nexthop[] {
  return [...list].sort((a, b) => nexthopKey(a).localeCompare(nexthopKey(b)));
}

/** Same destination, type, protocol and set of nexthops (order does not matter). */
export function routeMatches(route: NsRoute, want: RouteSpec): boolean {
  if (route.dst !== want.dst || route.type !== want.type || route.proto !== want.proto)
    return false;
  const a = sortNexthops(route.nexthops).map(nexthopKey);
  const b = sortNexthops(want.nexthops).map(nexthopKey);
  return a.length === b.length && a.every((k, i) => k === b[i]);
}

/** The route the kernel would replace for `dst`: same destination, default metric. */
export function routeAt(state: NsState, dst: string): NsRoute | undefined {
  const metric = defaultMetric(familyOfCidr(dst));
  return state.routes.find((r) => r.dst === dst && r.metric === metric);
}

export function findLink(state: NsState, name: string): NsLink | undefined {
  return state.links.find((l) => l.name === name);
}

export function describeRoute(r: { dst: string; type: string; nexthops: Nexthop[] }): string {
  if (r.type === 'blackhole') return `blackhole ${r.dst}`;
  const hops = r.nexthops.map((n) => `${n.gateway ? `via ${n.gateway} ` : ''}dev ${n.dev}`);
  return `${r.dst} ${hops.length ? hops.join(', ') : '(no nexthop)'}`;
}
