// The rules of a Pool's spec that relate its floating (pinned, anycast) ranges to the rest of
// it: the two lists never overlap each other, nor the pool's own node ranges (carved into node
// prefixes: an address there belongs to a node), nor contain a BGP peer's address. Each
// message names both things at fault. Overlaps with other Pools are the operator's (CEL sees
// one object).
import { celOverlap } from './floating.js';
import { cidrContainsIp, cidrsOverlap, isCidr, isIpAddress } from './net.js';

type List = 'pinned' | 'anycast';

/** What these rules read of a PoolSpec. */
interface Spec {
  ipv6: { cidr: string };
  ipv4?: { cidr: string } | undefined;
  pinned?: { cidrs: string[] } | undefined;
  anycast?: { cidrs: string[] } | undefined;
  bgp: { peers: { address: string }[] };
}

const cidrsOf = (s: Spec, list: List) => (s[list]?.cidrs ?? []).filter(isCidr);

/** The first pinned range overlapping an anycast range, as a message; true if none does. */
function crossOverlap(s: Spec): true | string {
  const anycast = cidrsOf(s, 'anycast');
  for (const a of cidrsOf(s, 'pinned')) {
    const b = anycast.find((b) => cidrsOverlap(a, b));
    if (b !== undefined) return `pinned range ${a} overlaps anycast range ${b}`;
  }
  return true;
}

/** The first range of the list overlapping a node range of the pool, as a message. */
function nodeOverlap(s: Spec, list: List): true | string {
  const node = [
    ['ipv6.cidr', s.ipv6.cidr],
    ['ipv4.cidr', s.ipv4?.cidr],
  ] as const;
  for (const a of cidrsOf(s, list)) {
    const hit = node.find(([, c]) => c !== undefined && isCidr(c) && cidrsOverlap(a, c));
    if (hit) return `${list} range ${a} overlaps the pool's ${hit[0]} ${hit[1] as string}`;
  }
  return true;
}

/** The first range of the list containing a peer's address, as a message. */
function peerInside(s: Spec, list: List): true | string {
  for (const a of cidrsOf(s, list)) {
    const peer = s.bgp.peers.find((p) => isIpAddress(p.address) && cidrContainsIp(a, p.address));
    if (peer) return `${list} range ${a} contains the BGP peer address ${peer.address}`;
  }
  return true;
}

/** CEL of the list's valid ranges: `x` a CIDR of it. */
const v6 = (x: string) => `(isCIDR(self.ipv6.cidr) && ${celOverlap(x, 'self.ipv6.cidr')})`;
const v4 = (x: string) =>
  `(has(self.ipv4) && isCIDR(self.ipv4.cidr) && ${celOverlap(x, 'self.ipv4.cidr')})`;
const peerHit = (x: string) => `(isIP(p.address) && cidr(${x}).containsIP(p.address))`;

function listRules(list: List) {
  const l = `self.${list}.cidrs`;
  return [
    {
      cel: `!has(self.${list}) || ${l}.all(a, !isCIDR(a) || !(${v6('a')} || ${v4('a')}))`,
      message: `${list} ranges must not overlap the pool's ipv6.cidr or ipv4.cidr`,
      messageExpression: `${l}.map(a, isCIDR(a) && (${v6('a')} || ${v4('a')}), '${list} range ' + a + " overlaps the pool's " + (${v6('a')} ? 'ipv6.cidr ' + self.ipv6.cidr : 'ipv4.cidr ' + self.ipv4.cidr))[0]`,
      field: `${list}.cidrs`,
      check: (s: Spec) => nodeOverlap(s, list),
    },
    {
      cel: `!has(self.${list}) || !has(self.bgp.peers) || ${l}.all(a, !isCIDR(a) || !self.bgp.peers.exists(p, ${peerHit('a')}))`,
      message: `${list} ranges must not contain a BGP peer's address`,
      // The peers' addresses, not the peers: the cost estimator sizes a filtered list of peer
      // objects (selectors, timers, ...) past its limit.
      messageExpression: `${l}.map(a, isCIDR(a) && self.bgp.peers.exists(p, ${peerHit('a')}), '${list} range ' + a + ' contains the BGP peer address ' + self.bgp.peers.map(p, p.address).filter(x, isIP(x) && cidr(a).containsIP(x))[0])[0]`,
      field: `${list}.cidrs`,
      check: (s: Spec) => peerInside(s, list),
    },
  ];
}

const pair = (a: string, b: string) => `isCIDR(${a}) && isCIDR(${b}) && ${celOverlap(a, b)}`;

/** The PoolSpec's rules on its floating ranges (withRules). */
export const floatingRangeRules = [
  {
    cel: `!has(self.pinned) || !has(self.anycast) || self.pinned.cidrs.all(a, self.anycast.cidrs.all(b, !(${pair('a', 'b')})))`,
    message: 'pinned and anycast ranges must not overlap',
    messageExpression: `self.pinned.cidrs.map(a, self.anycast.cidrs.exists(b, ${pair('a', 'b')}), 'pinned range ' + a + ' overlaps anycast range ' + self.anycast.cidrs.filter(b, ${pair('a', 'b')})[0])[0]`,
    field: 'anycast.cidrs',
    check: crossOverlap,
  },
  ...listRules('pinned'),
  ...listRules('anycast'),
];
