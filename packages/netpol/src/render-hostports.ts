// hostPort's part of flock's table: the DNAT maps of every local pod's hostPorts and the nat
// chains that use them (docs/install.md, "hostPort").
import type { LocalPodIR } from './ir.js';
import { comment, type NftChain, type NftSet } from './render-rules.js';

/**
 * hostPort: DNAT maps keyed by node address (or any node address) . protocol . port, whose
 * data is the pod's address . container port: a packet costs two hash lookups per family,
 * whatever the number of mappings. Two pods asking for one key (the store refuses that at ADD)
 * would make the table fail: the first pod (by interface) keeps it.
 */
export function hostPortMaps(pods: readonly LocalPodIR[]): NftSet[] {
  const lists = {
    v4: [] as string[],
    v6: [] as string[],
    anyV4: [] as string[],
    anyV6: [] as string[],
  };
  const keys = new Set<string>();
  for (const p of pods) {
    if (!p.hostPorts) continue;
    for (const k of ['v4', 'v6', 'anyV4', 'anyV6'] as const)
      for (const e of p.hostPorts[k]) {
        const key = `${k} ${e.slice(0, e.indexOf(' : '))}`;
        if (keys.has(key)) continue;
        keys.add(key);
        lists[k].push(e);
      }
  }
  const dnatMap = (name: string, key: string, family: 4 | 6, items: string[]): NftSet => ({
    kind: 'map',
    name,
    head: [`\t\ttype ${key}inet_proto . inet_service : ipv${family}_addr . inet_service`],
    elements: items,
  });
  return [
    dnatMap('hostports_v4', 'ipv4_addr . ', 4, lists.v4),
    dnatMap('hostports_any_v4', '', 4, lists.anyV4),
    dnatMap('hostports_v6', 'ipv6_addr . ', 6, lists.v6),
    dnatMap('hostports_any_v6', '', 6, lists.anyV6),
  ];
}

/**
 * hostPort chains: traffic to the node's own addresses (from outside, from pods, from the node)
 * is DNATed by the maps; then the filter chains judge it as traffic to the pod, its
 * NetworkPolicy included. A pod reaching its own hostPort (hairpin) is masqueraded: its
 * answer to itself would otherwise never leave it. A hostIP of 127.0.0.1 or ::1 works for the
 * node's clients that send from a node address (`curl --interface`, as the HostPort
 * conformance spec does); from a loopback source nothing is DNATed: the kernel routes such a
 * packet out of no other interface, and route_localnet, which would let it, would also let
 * pods reach the node's loopback services (CVE-2020-8558).
 */
export const HOST_PORT_CHAINS: NftChain[] = [
  {
    name: 'hostport_dnat',
    hook: false,
    lines: [
      '\tchain hostport_dnat {',
      '\t\tdnat ip to ip daddr . meta l4proto . th dport map @hostports_v4',
      '\t\tdnat ip to meta l4proto . th dport map @hostports_any_v4',
      '\t\tdnat ip6 to ip6 daddr . meta l4proto . th dport map @hostports_v6',
      '\t\tdnat ip6 to meta l4proto . th dport map @hostports_any_v6',
      '\t}',
    ],
  },
  {
    name: 'hostport_prerouting',
    hook: true,
    lines: [
      '\tchain hostport_prerouting {',
      '\t\ttype nat hook prerouting priority dstnat; policy accept;',
      '\t\tfib daddr type local jump hostport_dnat',
      '\t}',
    ],
  },
  {
    name: 'hostport_output',
    hook: true,
    lines: [
      '\tchain hostport_output {',
      '\t\ttype nat hook output priority -100; policy accept;',
      `\t\tip saddr 127.0.0.0/8 return ${comment('a loopback source cannot leave lo')}`,
      `\t\tip6 saddr ::1 return ${comment('a loopback source cannot leave lo')}`,
      '\t\tfib daddr type local jump hostport_dnat',
      '\t}',
    ],
  },
  {
    name: 'hostport_postrouting',
    hook: true,
    lines: [
      '\tchain hostport_postrouting {',
      '\t\ttype nat hook postrouting priority srcnat; policy accept;',
      `\t\tct status dnat oifname . ip saddr @pod_sources_v4 masquerade ${comment('hostPort hairpin')}`,
      `\t\tct status dnat oifname . ip6 saddr @pod_sources_v6 masquerade ${comment('hostPort hairpin')}`,
      '\t}',
    ],
  },
];
