// The rules of a Pool's spec that relate its floating (pinned, anycast, Service) ranges and its
// clusterIPs to the rest of it: no two lists overlap, none overlaps the pool's own node ranges
// (carved into node prefixes: an address there belongs to a node), no floating range contains
// a BGP peer's address. Each message names both things at fault. Overlaps with other Pools are
// the operator's (CEL sees one object). The translation prefix of a Private pool
// (ipv4.interNodePrefix) overlaps neither the pods' IPv6 range nor the NAT64 prefix.
import { celOverlap, FLOATING_LISTS, type FloatingList } from './floating.js';
import { cidrContainsIp, cidrsOverlap, isCidr, isIpAddress } from './net.js';

/** What these rules read of a PoolSpec. */
interface Spec {
  ipv6: { cidr: string };
  ipv4?: { cidr: string; interNodePrefix?: string | undefined } | undefined;
  nat64?: { prefix: string } | undefined;
  pinned?: { cidrs: string[] } | undefined;
  anycast?: { cidrs: string[] } | undefined;
  services?: { cidrs: string[]; clusterIPs?: string[] | undefined } | undefined;
  bgp: { peers: { address: string }[] };
}

/** A list of ranges the rules compare: its CEL path and guard, its name in messages. */
interface Ranges {
  label: string;
  /** CEL: true when the list is present. */
  present: string;
  /** CEL: the list. */
  list: string;
  /** Field path of its messages. */
  field: string;
  of: (s: Spec) => string[];
}

const floatingList = (l: FloatingList): Ranges => ({
  label: `${l} range`,
  present: `has(self.${l})`,
  list: `self.${l}.cidrs`,
  field: `${l}.cidrs`,
  of: (s) => (s[l]?.cidrs ?? []).filter(isCidr),
});

const CLUSTER_IPS: Ranges = {
  label: 'services.clusterIPs range',
  // has() of a field of an absent object is an error, not false: the parent first.
  present: 'has(self.services) && has(self.services.clusterIPs)',
  list: 'self.services.clusterIPs',
  field: 'services.clusterIPs',
  of: (s) => (s.services?.clusterIPs ?? []).filter(isCidr),
};

const pair = (a: string, b: string) => `isCIDR(${a}) && isCIDR(${b}) && ${celOverlap(a, b)}`;

/** Two lists never share an address: the first range of `a` overlapping one of `b`, named. */
function crossRule(a: Ranges, b: Ranges) {
  return {
    cel: `!(${a.present}) || !(${b.present}) || ${a.list}.all(a, ${b.list}.all(b, !(${pair('a', 'b')})))`,
    message: `${a.label}s and ${b.label}s must not overlap`,
    messageExpression: `${a.list}.map(a, ${b.list}.exists(b, ${pair('a', 'b')}), '${a.label} ' + a + ' overlaps ${b.label} ' + ${b.list}.filter(b, ${pair('a', 'b')})[0])[0]`,
    field: b.field,
    check: (s: Spec): true | string => {
      const others = b.of(s);
      for (const x of a.of(s)) {
        const y = others.find((y) => cidrsOverlap(x, y));
        if (y !== undefined) return `${a.label} ${x} overlaps ${b.label} ${y}`;
      }
      return true;
    },
  };
}

/** CEL of the pool's node ranges: `x` a CIDR of a list overlapping them. */
const v6 = (x: string) => `(isCIDR(self.ipv6.cidr) && ${celOverlap(x, 'self.ipv6.cidr')})`;
const v4 = (x: string) =>
  `(has(self.ipv4) && isCIDR(self.ipv4.cidr) && ${celOverlap(x, 'self.ipv4.cidr')})`;
const peerHit = (x: string) => `(isIP(p.address) && cidr(${x}).containsIP(p.address))`;

/** No range of the list overlaps the pool's node ranges. */
function nodeRule(r: Ranges) {
  return {
    cel: `!(${r.present}) || ${r.list}.all(a, !isCIDR(a) || !(${v6('a')} || ${v4('a')}))`,
    message: `${r.label}s must not overlap the pool's ipv6.cidr or ipv4.cidr`,
    messageExpression: `${r.list}.map(a, isCIDR(a) && (${v6('a')} || ${v4('a')}), '${r.label} ' + a + " overlaps the pool's " + (${v6('a')} ? 'ipv6.cidr ' + self.ipv6.cidr : 'ipv4.cidr ' + self.ipv4.cidr))[0]`,
    field: r.field,
    check: (s: Spec): true | string => {
      const node = [
        ['ipv6.cidr', s.ipv6.cidr],
        ['ipv4.cidr', s.ipv4?.cidr],
      ] as const;
      for (const a of r.of(s)) {
        const hit = node.find(([, c]) => c !== undefined && isCidr(c) && cidrsOverlap(a, c));
        if (hit) return `${r.label} ${a} overlaps the pool's ${hit[0]} ${hit[1] as string}`;
      }
      return true;
    },
  };
}

/** No range of the list contains a BGP peer's address. */
function peerRule(r: Ranges) {
  return {
    cel: `!(${r.present}) || !has(self.bgp.peers) || ${r.list}.all(a, !isCIDR(a) || !self.bgp.peers.exists(p, ${peerHit('a')}))`,
    message: `${r.label}s must not contain a BGP peer's address`,
    // The peers' addresses, not the peers: the cost estimator sizes a filtered list of peer
    // objects (selectors, timers, ...) past its limit.
    messageExpression: `${r.list}.map(a, isCIDR(a) && self.bgp.peers.exists(p, ${peerHit('a')}), '${r.label} ' + a + ' contains the BGP peer address ' + self.bgp.peers.map(p, p.address).filter(x, isIP(x) && cidr(a).containsIP(x))[0])[0]`,
    field: r.field,
    check: (s: Spec): true | string => {
      for (const a of r.of(s)) {
        const peer = s.bgp.peers.find(
          (p) => isIpAddress(p.address) && cidrContainsIp(a, p.address),
        );
        if (peer) return `${r.label} ${a} contains the BGP peer address ${peer.address}`;
      }
      return true;
    },
  };
}

const [pinned, anycast, services] = FLOATING_LISTS.map(floatingList) as [Ranges, Ranges, Ranges];

const INTER_NODE = 'self.ipv4.interNodePrefix';

/**
 * The translation prefix is the cluster's IPv4 in IPv6 clothes: an address of it that is also a
 * node's pod or the NAT64 prefix would be routed to two places.
 */
function interNodeApartRule(
  label: string,
  present: string,
  other: string,
  of: (s: Spec) => string | undefined,
) {
  return {
    cel: `!has(self.ipv4) || !has(${INTER_NODE}) || !(${present}) || !(${pair(INTER_NODE, other)})`,
    message: `ipv4.interNodePrefix must not overlap ${label}`,
    messageExpression: `'ipv4.interNodePrefix must not overlap ${label}: ' + ${INTER_NODE} + ' overlaps ' + ${other}`,
    field: 'ipv4.interNodePrefix',
    check: (s: Spec): true | string => {
      const prefix = s.ipv4?.interNodePrefix;
      const o = of(s);
      return !prefix || !o || !isCidr(prefix) || !isCidr(o) || !cidrsOverlap(prefix, o)
        ? true
        : `ipv4.interNodePrefix must not overlap ${label}: ${prefix} overlaps ${o}`;
    },
  };
}

/** The PoolSpec's rules on its floating ranges, clusterIPs and translation prefix (withRules). */
export const floatingRangeRules = [
  interNodeApartRule('ipv6.cidr', 'true', 'self.ipv6.cidr', (s) => s.ipv6.cidr),
  interNodeApartRule(
    'nat64.prefix',
    'has(self.nat64)',
    'self.nat64.prefix',
    (s) => s.nat64?.prefix,
  ),
  crossRule(pinned, anycast),
  crossRule(pinned, services),
  crossRule(anycast, services),
  ...[pinned, anycast, services].flatMap((r) => [nodeRule(r), peerRule(r)]),
  // A Service CIDR is announced as it is; its addresses are kube-proxy's, no other list's.
  nodeRule(CLUSTER_IPS),
  ...[pinned, anycast, services].map((r) => crossRule(CLUSTER_IPS, r)),
];
