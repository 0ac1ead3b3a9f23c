// What this node announces and routes, computed from its NodeConfig, its committed allocations
// and its pod cache. The rules (docs/announcements.md):
//   - aggregates: cidr6 and cidr4, always (cidr4 not when the pool's IPv4 is Private: then its
//     translation into the pool's interNodePrefix, which other nodes' pods reach it by);
//   - host routes (/128, /32): every address of a live pod that lies in a pinned range or
//     outside the aggregates — only while the pod is in the cache with the UID of its ADD, and
//     pinned ones only while the pod holds their claim and until the pod is being deleted (its
//     replacement may hold the address on another node already: the 2026-08-16 blackhole);
//   - anycast: an address while at least one live owning pod is Ready and not being deleted,
//     its claim is the anycast group of the pod's namespace and key, inside the NodeConfig's
//     anycast ranges, and of a family the pod has (an IPv4 anycast address on a pod without
//     IPv4 has no way back out: warned and left out);
//   - communities: a pod's own (its annotation, kept in its allocation at ADD) ride on its
//     host routes and anycast addresses while a grant of the NodeConfig still allows them; the
//     classes' communities and the local preference come from the NodeConfig.
// The same plan feeds BIRD (what is announced) and the anycast reconciler (what is routed).
import { communitiesOutside, splitCommunities, type NodeConfigSpec } from '@flock/api';
import { announcedPrefixes, type BirdModel, type BirdPeer } from '@flock/bird';
import { parseAddress, parsePrefix, prefixContainsAddress, type Prefix } from '@flock/ipam';
import { type AllocationEntry } from '../store/index.js';
import { hostVethName } from '../datapath/index.js';
import { allowedCommunities } from '../claims/grants.js';
import { attachmentKey, holdsPinned, inAnycastGroup, type ClaimOf } from '../claims/ownership.js';
import { interNodeOf, translatedRange } from '../nat64/siit.js';
import { entryLiveness, type PodOf } from '../node/liveness.js';
import type { ServiceAnnouncement } from './service-addresses.js';

export interface AnnouncementPlan {
  /** The node's prefixes, as in its NodeConfig. */
  aggregates: string[];
  /** Addresses announced as /128 or /32, sorted. */
  hostRoutes: string[];
  /** Anycast address → host veths of its Ready local pods, both sorted. */
  anycast: Map<string, string[]>;
  /** Host route or anycast address → its pods' own communities, both sorted. */
  communities: Map<string, string[]>;
  /** Service (LoadBalancer) address → its Service and why this node announces it (sorted). */
  services: Map<string, ServiceAnnouncement>;
  /** Committed allocations whose pod is live here. */
  livePods: number;
  /** Why an address was left out (outside the ranges, family mismatch); one line each. */
  warnings: string[];
}

function prefixes(cidrs: readonly string[]): Prefix[] {
  return cidrs.flatMap((c) => {
    const p = parsePrefix(c);
    return p.ok ? [p.value] : [];
  });
}

function inAny(list: readonly Prefix[], ip: string): boolean {
  const address = parseAddress(ip);
  return address !== undefined && list.some((p) => prefixContainsAddress(p, address));
}

/** Private IPv4 is never announced: not the slice, not a pod's address of it. */
const isPrivate4 = (spec: NodeConfigSpec) => spec.ipv4?.mode === 'Private';

/** How an address is routed: a host route because it is pinned, or because no aggregate covers it. */
type HostRouteKind = 'pinned' | 'foreign' | undefined;

/**
 * Is this address announced as a host route (in a pinned range, or outside the aggregates)?
 * Parsing dominates a pass over a big node, so answers are kept per NodeConfig spec object (a
 * new spec is a new object) and dropped when the memo outgrows the node's allocations.
 */
const hostRouteMemo = new WeakMap<NodeConfigSpec, Map<string, HostRouteKind>>();

function hostRouteTest(spec: NodeConfigSpec, entries: number): (ip: string) => HostRouteKind {
  const aggregates = prefixes([spec.cidr6, ...(spec.cidr4 ? [spec.cidr4] : [])]);
  const pinned = prefixes(spec.pinnedCIDRs ?? []);
  let memo = hostRouteMemo.get(spec);
  if (!memo || memo.size > 4 * entries + 64) {
    memo = new Map();
    hostRouteMemo.set(spec, memo);
  }
  const known = memo;
  return (ip) => {
    if (known.has(ip)) return known.get(ip);
    const address = parseAddress(ip);
    const within = (list: Prefix[]) =>
      address !== undefined && list.some((p) => prefixContainsAddress(p, address));
    const answer: HostRouteKind = within(pinned)
      ? 'pinned'
      : within(aggregates)
        ? undefined
        : 'foreign';
    known.set(ip, answer);
    return answer;
  };
}

/** The pod's own communities that the NodeConfig still allows (the others are warned about). */
function podCommunities(
  entry: AllocationEntry,
  spec: NodeConfigSpec,
  who: string,
  warnings: string[],
): string[] {
  const own = entry.communities ?? [];
  if (!own.length) return own;
  const refused = new Set(communitiesOutside(own, allowedCommunities(spec)));
  for (const c of refused)
    warnings.push(`community ${c} of ${who} is no longer allowed by a grant of this node's Pool`);
  return own.filter((c) => !refused.has(c));
}

export function planAnnouncements(input: {
  spec: NodeConfigSpec;
  entries: readonly AllocationEntry[];
  podOf: PodOf;
  /** Who owns each floating address (the claims cache). */
  claimOf: ClaimOf;
}): AnnouncementPlan {
  const { spec } = input;
  const interNode = interNodeOf(spec);
  const aggregates = [
    spec.cidr6,
    ...(spec.cidr4 && !isPrivate4(spec) ? [spec.cidr4] : []),
    ...(interNode ? [translatedRange(interNode.prefix, interNode.slice)] : []),
  ];
  const isHostRoute = hostRouteTest(spec, input.entries.length);
  const anycastPrefixes = prefixes(spec.anycastCIDRs ?? []);
  const hostRoutes = new Set<string>();
  const anycast = new Map<string, string[]>();
  const communities = new Map<string, Set<string>>();
  const warnings: string[] = [];
  let livePods = 0;

  for (const entry of input.entries) {
    if (entry.state !== 'committed') continue;
    const pod = input.podOf(entry.namespace, entry.pod);
    const liveness = entryLiveness(entry, pod);
    if (!liveness.live) continue;
    livePods++;
    const who = `pod ${entry.namespace}/${entry.pod}`;
    const tags = podCommunities(entry, spec, who, warnings);
    const tag = (ip: string) => {
      if (tags.length) communities.set(ip, new Set([...(communities.get(ip) ?? []), ...tags]));
    };
    for (const ip of [entry.ip6, ...(entry.ip4 ? [entry.ip4] : [])]) {
      const kind = isHostRoute(ip);
      if (
        kind === 'pinned' &&
        !liveness.terminating &&
        !holdsPinned(input.claimOf, ip, entry.podUID)
      ) {
        warnings.push(`pinned ${ip} of ${who} is not claimed by it`);
        continue;
      }
      // A pinned address whose range left the Pool is withdrawn, not announced as "foreign".
      if (kind === 'foreign' && entry.pinned) {
        warnings.push(`pinned ${ip} of ${who} is outside this node's pinned ranges`);
        continue;
      }
      if (kind === 'foreign' || (kind === 'pinned' && !liveness.terminating)) {
        hostRoutes.add(ip);
        tag(ip);
      }
    }
    const key = attachmentKey(entry, pod);
    if (!liveness.ready || liveness.terminating) continue;
    for (const ip of entry.anycast) {
      if (!inAny(anycastPrefixes, ip)) {
        warnings.push(`anycast ${ip} of ${who} is outside this node's anycast ranges`);
        continue;
      }
      if (key === undefined || !inAnycastGroup(input.claimOf, ip, entry.namespace, key)) {
        warnings.push(`anycast ${ip} of ${who} is not claimed by its group`);
        continue;
      }
      if (!ip.includes(':') && !entry.ip4) {
        warnings.push(`anycast ${ip} of ${who} is IPv4 but the pod has no IPv4 address`);
        continue;
      }
      const veths = anycast.get(ip) ?? [];
      veths.push(hostVethName(entry.containerID, entry.ifname));
      anycast.set(ip, veths);
      tag(ip);
    }
  }
  const sortedAnycast = new Map(
    [...anycast.keys()].sort().map((ip) => [ip, [...new Set(anycast.get(ip))].sort()]),
  );
  return {
    aggregates,
    hostRoutes: [...hostRoutes].sort(),
    anycast: sortedAnycast,
    communities: new Map(
      [...communities.keys()].sort().map((ip) => [ip, [...communities.get(ip)!].sort()]),
    ),
    services: new Map(),
    livePods,
    warnings: warnings.sort(),
  };
}

/** The BIRD model of a plan: what the node announces and to whom. */
export function toBirdModel(input: {
  plan: AnnouncementPlan;
  spec: NodeConfigSpec;
  routerId: string;
  peers: BirdPeer[];
}): BirdModel {
  return {
    routerId: input.routerId,
    asn: input.spec.bgp.asn,
    peers: input.peers,
    aggregates: input.plan.aggregates,
    pinned: input.plan.hostRoutes,
    anycast: [...input.plan.anycast.keys()],
    ...(input.plan.services.size ? { services: [...input.plan.services.keys()] } : {}),
    ...(input.spec.clusterIPCIDRs?.length ? { serviceRanges: input.spec.clusterIPCIDRs } : {}),
    ...(input.spec.bgp.localPreference === undefined
      ? {}
      : { localPreference: input.spec.bgp.localPreference }),
    ...(input.spec.bgp.communities ? { communities: input.spec.bgp.communities } : {}),
    ...(input.plan.communities.size
      ? {
          addressCommunities: [...input.plan.communities].map(([address, list]) => ({
            address,
            ...splitCommunities(list),
          })),
        }
      : {}),
  };
}

/** Prefixes a model announces (aggregates, host routes, anycast; each prefix once). */
export function advertisedCount(model: BirdModel): number {
  const p = announcedPrefixes(model);
  return p[6].length + p[4].length;
}
