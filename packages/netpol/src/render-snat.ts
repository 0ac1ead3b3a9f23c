// Private IPv4's part of flock's table (docs/install.md, "IPv4 modes"): pods of a Private pool
// reach destinations outside the cluster's ranges from the node's IPv4 address. The chain runs at
// postrouting, after the forward chain judged the packet by the pod's own address; traffic to
// the cluster's ranges and to this node's pods keeps its source, so NetworkPolicy on the other
// side sees the real pod. Conntrack undoes the translation on the way back.
import { cidrInterval, intervalElement, mergeIntervals } from './addresses.js';
import { comment, type NftChain } from './render-rules.js';

export interface SnatOptions {
  /** Sources to translate: the node's private IPv4 slice. */
  sources: readonly string[];
  /** Destinations reached unNATed: the pool's private range (the cluster's IPv4). */
  keep: readonly string[];
}

/** IPv4 CIDRs as nft elements, merged; anything that is not an IPv4 CIDR is refused. */
function ipv4Elements(what: string, cidrs: readonly string[]): string[] {
  const intervals = cidrs.map((c) => {
    const parsed = cidrInterval(c);
    if (parsed?.family !== 4) throw new Error(`SNAT ${what}: ${JSON.stringify(c)} is no IPv4 CIDR`);
    return parsed.interval;
  });
  return mergeIntervals(intervals).map((iv) => intervalElement(iv, 4));
}

/**
 * The hooked SNAT chain; none without sources. `fully-random`: source ports picked at random,
 * so two pods' connections to one destination never race for one translated port (as
 * kube-proxy's and Calico's masquerades do). Toward one server that closes first, any SNAT
 * meets its TIME_WAIT tuples (docs/benchmarks.md, "NAT64 through Tayga").
 */
export function snatChains(o: SnatOptions | undefined): NftChain[] {
  if (!o?.sources.length) return [];
  const sources = ipv4Elements('sources', o.sources);
  const keep = ipv4Elements('destinations kept', o.keep);
  return [
    {
      name: 'snat_postrouting',
      hook: true,
      lines: [
        '\tchain snat_postrouting {',
        '\t\ttype nat hook postrouting priority srcnat; policy accept;',
        `\t\toifname @pod_ifaces return ${comment('to a pod of this node: its own source')}`,
        ...(keep.length
          ? [`\t\tip daddr { ${keep.join(', ')} } return ${comment('inside the cluster: unNATed')}`]
          : []),
        `\t\tip saddr { ${sources.join(', ')} } masquerade fully-random ${comment('private IPv4 leaving the cluster')}`,
        '\t}',
      ],
    },
  ];
}
