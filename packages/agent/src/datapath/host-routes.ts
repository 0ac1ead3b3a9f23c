// Node-wide routes: the summary blackholes, anycast routes, and the views of flock's routes
// and veths the agent lists. Pure functions over the model: no I/O.
import { FLOCK_ANYCAST_RT_PROTO, FLOCK_RT_PROTO, HOST_VETH_PREFIX } from './naming.js';
import { routeMatches, sortNexthops, type NsLink, type NsRoute, type RouteSpec } from './model.js';
import type { AnycastRoute, FlockRoute, Nexthop, PodVeth } from './types.js';
import { hostCidr, type ValidAddress } from './validate.js';

const isPodRoute = (r: NsRoute) =>
  r.proto === FLOCK_RT_PROTO &&
  r.type === 'unicast' &&
  r.nexthops.length === 1 &&
  r.nexthops[0]?.gateway === undefined &&
  (r.nexthops[0]?.dev ?? '').startsWith(HOST_VETH_PREFIX);

const isBlackhole = (r: NsRoute) => r.proto === FLOCK_RT_PROTO && r.type === 'blackhole';
const isAnycast = (r: NsRoute) => r.proto === FLOCK_ANYCAST_RT_PROTO && r.type === 'unicast';

export function blackholeSpec(dst: string): RouteSpec {
  return { dst, type: 'blackhole', proto: FLOCK_RT_PROTO, nexthops: [] };
}

/** Blackholes to add and flock blackholes to remove so that exactly `cidrs` remain. */
export function diffBlackholes(
  routes: NsRoute[],
  cidrs: string[],
): { add: string[]; remove: string[] } {
  const want = new Set(cidrs);
  const have = new Set(routes.filter(isBlackhole).map((r) => r.dst));
  return {
    add: [...want].filter((c) => !have.has(c)).sort(),
    remove: [...have].filter((c) => !want.has(c)).sort(),
  };
}

/** The pod's IPv6 address behind each flock veth, from the pod host routes. */
function podIp6ByVeth(routes: NsRoute[]): Map<string, string> {
  const out = new Map<string, string>();
  for (const r of routes.filter(isPodRoute).sort((a, b) => a.dst.localeCompare(b.dst))) {
    const dev = r.nexthops[0]?.dev;
    if (dev && r.family === 6 && r.dst.endsWith('/128') && !out.has(dev))
      out.set(dev, r.dst.slice(0, -4));
  }
  return out;
}

interface AnycastPlan {
  /** The route to have; undefined when no veth is usable (the route must go). */
  want?: RouteSpec;
  hostVeths: string[];
  skipped: { hostVeth: string; reason: string }[];
}

/**
 * The anycast route for `ip` through the given veths, sorted. IPv6 multipath routes need a
 * gateway per nexthop, so IPv6 nexthops go via the pod's own /128 (found from its host route);
 * IPv4 nexthops are plain devices. A veth without a pod route is skipped.
 */
export function planAnycast(ip: ValidAddress, hostVeths: string[], routes: NsRoute[]): AnycastPlan {
  const byVeth = podIp6ByVeth(routes);
  const nexthops: Nexthop[] = [];
  const skipped: AnycastPlan['skipped'] = [];
  for (const dev of [...new Set(hostVeths)].sort()) {
    const gateway = byVeth.get(dev);
    if (!gateway) skipped.push({ hostVeth: dev, reason: 'no flock pod route through it' });
    else nexthops.push(ip.family === 6 ? { dev, gateway } : { dev });
  }
  const used = nexthops.map((n) => n.dev);
  if (!nexthops.length) return { hostVeths: used, skipped };
  return {
    want: { dst: hostCidr(ip), type: 'unicast', proto: FLOCK_ANYCAST_RT_PROTO, nexthops },
    hostVeths: used,
    skipped,
  };
}

/** The current anycast route of `dst`, if any. */
export function anycastRouteAt(routes: NsRoute[], dst: string): NsRoute | undefined {
  return routes.find((r) => isAnycast(r) && r.dst === dst);
}

export function anycastUpToDate(current: NsRoute | undefined, plan: AnycastPlan): boolean {
  return plan.want
    ? current !== undefined && routeMatches(current, plan.want)
    : current === undefined;
}

export function toFlockRoutes(routes: NsRoute[]): FlockRoute[] {
  const out: FlockRoute[] = [];
  for (const r of routes) {
    const kind = isPodRoute(r)
      ? 'pod'
      : isBlackhole(r)
        ? 'blackhole'
        : isAnycast(r)
          ? 'anycast'
          : undefined;
    if (kind) out.push({ kind, dst: r.dst, nexthops: sortNexthops(r.nexthops) });
  }
  return out.sort((a, b) => a.kind.localeCompare(b.kind) || a.dst.localeCompare(b.dst));
}

export function toAnycastRoutes(routes: NsRoute[]): AnycastRoute[] {
  return routes
    .filter(isAnycast)
    .map((r) => ({
      ip: r.dst.slice(0, r.dst.indexOf('/')),
      hostVeths: r.nexthops.map((n) => n.dev).sort(),
    }))
    .sort((a, b) => a.ip.localeCompare(b.ip));
}

export function toPodVeths(links: NsLink[], routes: NsRoute[]): PodVeth[] {
  const pod = routes.filter(isPodRoute);
  return links
    .filter((l) => l.name.startsWith(HOST_VETH_PREFIX) && l.kind === 'veth')
    .map((l) => ({
      name: l.name,
      ifindex: l.ifindex,
      mac: l.mac,
      up: l.up,
      mtu: l.mtu,
      addresses: l.addresses.map((a) => a.cidr).sort(),
      routes: pod
        .filter((r) => r.nexthops[0]?.dev === l.name)
        .map((r) => r.dst)
        .sort(),
    }))
    .sort((a, b) => a.name.localeCompare(b.name));
}

/**
 * flock routes left for a torn-down pod's addresses: through its own veth, or through a device
 * that is no flock veth. A route through another flock veth belongs to the pod that holds the
 * address now, and stays.
 */
export function leftoverPodRoutes(routes: NsRoute[], dsts: string[], hostVeth: string): NsRoute[] {
  return routes.filter(
    (r) =>
      r.proto === FLOCK_RT_PROTO &&
      r.type === 'unicast' &&
      dsts.includes(r.dst) &&
      r.nexthops.every((n) => n.dev === hostVeth || !n.dev.startsWith(HOST_VETH_PREFIX)),
  );
}
