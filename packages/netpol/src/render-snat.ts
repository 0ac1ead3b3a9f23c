// Private IPv4's and NAT64's part of flock's table (docs/install.md, "IPv4 modes"): pods of a
// Private pool reach destinations outside the cluster's ranges from the node's IPv4 address, and
// so does the NAT64 translator's node-local pool, to any destination off the node. The chain runs
// at postrouting, after the forward chain judged the packet by the pod's own address; traffic to
// the cluster's ranges and to this node's pods keeps its source, so NetworkPolicy on the other
// side sees the real pod. Conntrack undoes the translation on the way back.
import { cidrInterval, intervalElement, mergeIntervals } from './addresses.js';
import { comment, type NftChain } from './render-rules.js';

export interface SnatOptions {
  /** Sources to translate: the node's private IPv4 slice. */
  sources: readonly string[];
  /** Destinations reached unNATed: the pool's private range (the cluster's IPv4). */
  keep: readonly string[];
  /**
   * The NAT64 translator: its TUN device, its IPv4 pool (translated to any destination), and the
   * cluster's own IPv4 ranges, which nothing translated reaches.
   */
  nat64?: { iface: string; pool: string; deny?: readonly string[] } | undefined;
  /**
   * The inter-node translator of a Private pool (stateless, no NAT): its TUN device and the
   * translation prefix, the only IPv6 sources it translates. A packet from it that claims a pod
   * of this node is forged; anti-spoofing drops it (node_sources_v4).
   */
  interNode?: { iface: string; prefix: string } | undefined;
}

/** A Linux interface name, checked before it goes into nft text. */
const IFACE = /^[A-Za-z0-9_.-]{1,15}$/;

function ifaceName(what: string, iface: string): string {
  if (!IFACE.test(iface)) throw new Error(`${what}: ${JSON.stringify(iface)} is no interface name`);
  return iface;
}
const translatorIface = (o: SnatOptions) => ifaceName('NAT64', o.nat64!.iface);
const interNodeIface = (o: SnatOptions) => ifaceName('inter-node', o.interNode!.iface);

/** CIDRs of a family as nft elements, merged; anything that is not such a CIDR is refused. */
function elements(what: string, cidrs: readonly string[], family: 4 | 6 = 4): string[] {
  const intervals = cidrs.map((c) => {
    const parsed = cidrInterval(c);
    if (parsed?.family !== family)
      throw new Error(`SNAT ${what}: ${JSON.stringify(c)} is no IPv${family} CIDR`);
    return parsed.interval;
  });
  return mergeIntervals(intervals).map((iv) => intervalElement(iv, family));
}
const ipv4Elements = (what: string, cidrs: readonly string[]) => elements(what, cidrs, 4);

/**
 * The hooked SNAT chain; none without sources. `fully-random`: source ports picked at random,
 * so two pods' connections to one destination never race for one translated port (as
 * kube-proxy's and Calico's masquerades do). Toward one server that closes first, any SNAT
 * meets its TIME_WAIT tuples (docs/benchmarks.md, "NAT64 through Tayga").
 */
export function snatChains(o: SnatOptions | undefined): NftChain[] {
  if (!o || (!o.sources.length && !o.nat64)) return [];
  const sources = ipv4Elements('sources', o.sources);
  const keep = ipv4Elements('destinations kept', o.keep);
  // Never unNATed beyond the node: only the translator answers for its pool.
  const nat64 = o.nat64
    ? [
        `\t\tiifname "${translatorIface(o)}" ip saddr ${ipv4Elements('NAT64 pool', [o.nat64.pool]).join(', ')} masquerade fully-random ${comment('NAT64: the translator leaving the node')}`,
      ]
    : [];
  return [
    {
      name: 'snat_postrouting',
      hook: true,
      lines: [
        '\tchain snat_postrouting {',
        '\t\ttype nat hook postrouting priority srcnat; policy accept;',
        `\t\toifname @pod_ifaces return ${comment('to a pod of this node: its own source')}`,
        ...nat64,
        ...(keep.length && sources.length
          ? [`\t\tip daddr { ${keep.join(', ')} } return ${comment('inside the cluster: unNATed')}`]
          : []),
        ...(sources.length
          ? [
              `\t\tip saddr { ${sources.join(', ')} } masquerade fully-random ${comment('private IPv4 leaving the cluster')}`,
            ]
          : []),
        '\t}',
      ],
    },
  ];
}

/**
 * Input from the translators: nothing new for the node itself. A pod reaching the node's IPv4
 * address through NAT64 would otherwise arrive from the translator's interface, past the rules
 * that keep pods off the node's ports.
 */
export function translatorInput(o: SnatOptions | undefined): string[] {
  return [
    ...(o?.nat64
      ? [
          `\t\tiifname "${translatorIface(o)}" ct state new counter drop ${comment('NAT64: not for the node')}`,
        ]
      : []),
    // Only this node's slice is routed into the inter-node translator: nothing for the node.
    ...(o?.interNode
      ? [
          `\t\tiifname "${interNodeIface(o)}" ct state new counter drop ${comment('inter-node: not for the node')}`,
        ]
      : []),
  ];
}

/**
 * Forwarding from the NAT64 translator: not to the cluster's own IPv4 ranges. Translated, a pod
 * leaves its node as the node's address; a NetworkPolicy that admits the node (or 0.0.0.0/0 but
 * the cluster) would admit it where its own IPv6 address is refused.
 */
export function translatorForward(o: SnatOptions | undefined): string[] {
  const deny = o?.nat64?.deny ?? [];
  return [
    ...(deny.length
      ? [
          `\t\tiifname "${translatorIface(o!)}" ip daddr { ${ipv4Elements('NAT64 cluster ranges', deny).join(', ')} } counter drop ${comment("NAT64: not to the cluster's own IPv4")}`,
        ]
      : []),
    // Any pod of the cluster can send IPv6 to PREFIX + this node's slice: Tayga, one thread for
    // the whole node, would spend itself refusing a flood of other sources. The kernel does.
    ...(o?.interNode
      ? [
          `\t\toifname "${interNodeIface(o)}" ip6 saddr != ${elements('inter-node prefix', [o.interNode.prefix], 6).join(', ')} counter drop ${comment('inter-node: translated sources only')}`,
        ]
      : []),
  ];
}
