// The ARP guard: a table of the `arp` family beside flock's `inet` table, which does not see ARP.
import { comment, type NftSet, type NftTable } from './render-rules.js';

export const ARP_TABLE_FAMILY = 'arp';
export const ARP_TABLE_COMMENT = 'flock ARP guard: pods announce only their own addresses';

/**
 * The ARP guard: from a pod only ARP whose sender is one of its own IPv4 addresses, or 0.0.0.0
 * (a probe). Any other sender is forged and would take a slot of the node's neighbour table
 * (an ARP request for a node address makes the node learn its sender). Its sets are copies of
 * the inet table's: nft sets belong to one table.
 */
export function arpGuard(podIfaces: NftSet, podSources: NftSet, guard: NftSet): NftTable {
  return {
    sets: [podIfaces, podSources, guard],
    chains: [
      {
        name: 'input',
        hook: true,
        lines: [
          '\tchain input {',
          '\t\ttype filter hook input priority filter; policy accept;',
          '\t\tiifname != @pod_ifaces accept',
          '\t\tarp saddr ip 0.0.0.0 accept',
          '\t\tiifname . arp saddr ip @pod_sources_v4 accept',
          `\t\tcounter drop ${comment('ARP from a pod with a forged sender')}`,
          '\t}',
        ],
      },
    ],
  };
}
