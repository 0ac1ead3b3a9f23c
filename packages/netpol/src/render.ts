// render(IR) → the nftables script that replaces flock's table in one transaction. Pure and
// deterministic: the same IR always gives the same text, so "unchanged" is a string compare.
//
// Per packet the work is constant in the number of pods and peers: two hash lookups for
// anti-spoofing, conntrack, then one verdict-map lookup per direction that jumps straight to the
// pod's own chain, whose rules each test set membership (hash or interval sets).
import type { DirectionIR, LocalPodIR, NetpolIR } from './ir.js';
import {
  EGRESS_ALLOWED,
  comment,
  ruleLines,
  tierChain,
  type Families,
  type NftChain,
  type NftSet,
  type NftTable,
} from './render-rules.js';
import { ARP_TABLE_COMMENT, ARP_TABLE_FAMILY, arpGuard } from './render-arp.js';
import { HOST_PORT_CHAINS, hostPortMaps } from './render-hostports.js';
import { snatChains, translatorForward, translatorInput, type SnatOptions } from './render-snat.js';

export {
  EGRESS_ALLOWED,
  comment,
  type NftChain,
  type NftSet,
  type NftTable,
} from './render-rules.js';
export { ARP_TABLE_FAMILY } from './render-arp.js';

export const TABLE_FAMILY = 'inet';
export const TABLE_NAME = 'flock';
export const TABLE_COMMENT = 'flock NetworkPolicy: replaced as a whole by the agent';

const ICMP_ERRORS =
  'icmp type { destination-unreachable, time-exceeded, parameter-problem } accept';
const ICMPV6_ERRORS =
  'icmpv6 type { destination-unreachable, packet-too-big, time-exceeded, parameter-problem } accept';
const ND_ALL =
  'icmpv6 type { nd-router-solicit, nd-router-advert, nd-neighbor-solicit, nd-neighbor-advert, nd-redirect }';
const ND_FROM_HOSTS = 'icmpv6 type { nd-router-solicit, nd-neighbor-solicit, nd-neighbor-advert }';

/**
 * Neighbour discovery before anything else (it is how the node and its neighbours find each
 * other). From a pod only what a host sends, from `::` (duplicate address detection) or its own
 * addresses: a pod has no link-local address (flock creates its interface with none), so any
 * other source is forged, and each forged source would take a slot of the node's neighbour
 * table. Router advertisements and redirects from a pod are dropped: it is no router.
 */
function neighbourDiscovery(): string[] {
  return [
    `\t\tiifname @pod_ifaces icmpv6 type { nd-router-advert, nd-redirect } drop ${comment('pods are no routers')}`,
    `\t\tiifname @pod_ifaces ${ND_FROM_HOSTS} ip6 saddr :: accept`,
    `\t\tiifname @pod_ifaces ${ND_FROM_HOSTS} iifname . ip6 saddr @pod_sources_v6 accept`,
    `\t\tiifname @pod_ifaces ${ND_ALL} counter drop ${comment('neighbour discovery from a forged source')}`,
    `\t\t${ND_ALL} accept`,
  ];
}

export function elements(items: readonly string[], indent: string): string[] {
  if (items.length === 0) return [];
  const lines: string[] = [];
  for (let i = 0; i < items.length; i += 8) lines.push(items.slice(i, i + 8).join(', '));
  return [`${indent}elements = { ${lines.join(`,\n${indent}\t     `)} }`];
}

function set(
  name: string,
  type: string,
  flags: string | undefined,
  note: string | undefined,
  items: string[],
): NftSet {
  return {
    kind: 'set',
    name,
    head: [
      `\t\ttype ${type}`,
      ...(flags ? [`\t\tflags ${flags}`] : []),
      ...(note ? [`\t\t${comment(note)}`] : []),
    ],
    elements: items,
  };
}

function map(name: string, items: string[]): NftSet {
  return { kind: 'map', name, head: ['\t\ttype ifname : verdict'], elements: items };
}

/** The lines of one set or map in a table block. */
export function setLines(s: NftSet): string[] {
  return [`\t${s.kind} ${s.name} {`, ...s.head, ...elements(s.elements, '\t\t'), '\t}'];
}

export const ingressChain = (pod: LocalPodIR) => `ingress_${pod.interface}`;
export const egressChain = (pod: LocalPodIR) => `egress_${pod.interface}`;

/** Allowed: ingress accepts; egress returns to the base chain (the destination's ingress is
 *  checked there too). */
const allowVerdict = (direction: 'ingress' | 'egress') =>
  direction === 'ingress' ? 'accept' : 'return';

/** What renderTable may add to the IR's rules. */
export interface RenderOptions {
  /**
   * Log packets a pod chain drops, at most this many per second per chain (burst twice that),
   * to the kernel log with the prefix `flock-drop DIRECTION NAMESPACE/POD: `. 0 or absent: off.
   */
  logDroppedPerSecond?: number;
  /**
   * TCP ports of the node that local pods may not reach (the agent's health and metrics port:
   * its metrics name every local pod). Packets from pod veths to them are dropped on input.
   */
  nodePortsClosedToPods?: readonly number[];
  /** Private IPv4 and NAT64: translate these sources beyond the cluster's ranges (render-snat.ts). */
  snat?: SnatOptions;
}

/** The kernel log prefix of a pod chain's dropped packets (nft allows 127 bytes; kept short). */
export function dropLogPrefix(direction: 'ingress' | 'egress', pod: string): string {
  return `flock-drop ${direction} ${pod.replace(/[^A-Za-z0-9._/-]/g, '_')}`.slice(0, 100) + ': ';
}

/** The end of a pod chain: optionally a rate-limited log, then the counted drop. */
function dropLines(pod: LocalPodIR, direction: 'ingress' | 'egress', o: RenderOptions): string[] {
  const rate = o.logDroppedPerSecond;
  const log =
    rate && rate > 0
      ? [
          `\t\tlimit rate ${rate}/second burst ${2 * rate} packets log prefix "${dropLogPrefix(direction, pod.pod)}" level info`,
        ]
      : [];
  return [...log, '\t\tcounter drop'];
}

/**
 * A pod's chain of one direction: a jump to its Admin tier chain, then either the NetworkPolicy
 * tier (its allow rules, then drop) or, when no NetworkPolicy isolates the pod, a jump to its
 * Baseline tier chain; falling off the end allows. Returns the pod chain and the tier chains it
 * jumps to (the caller keeps one of each shared chain).
 */
function podChains(
  pod: LocalPodIR,
  d: DirectionIR,
  direction: 'ingress' | 'egress',
  families: Families,
  options: RenderOptions,
): NftChain[] {
  const name = direction === 'ingress' ? ingressChain(pod) : egressChain(pod);
  const allow = allowVerdict(direction);
  const admin = d.admin ? tierChain('admin', d.admin, direction, families) : undefined;
  const baseline =
    d.policies.length === 0 && d.baseline
      ? tierChain('baseline', d.baseline, direction, families)
      : undefined;
  const notes = [
    d.admin ? `admin ${d.admin.policies.join(' ')}` : '',
    d.policies.join(' '),
    d.baseline ? `baseline ${d.baseline.policies.join(' ')}` : '',
  ].filter((n) => n !== '');
  const main: NftChain = {
    name,
    hook: false,
    lines: [
      `\tchain ${name} {`,
      `\t\t${comment(`${pod.pod} ${direction}: ${notes.join(' ')}`)}`,
      ...(admin ? [`\t\tjump ${admin.name}`] : []),
      ...(d.policies.length > 0
        ? [
            ...d.rules.flatMap((r) => ruleLines(r, direction, families, allow)),
            ...dropLines(pod, direction, options),
          ]
        : baseline
          ? [`\t\tjump ${baseline.name}`]
          : []),
      '\t}',
    ],
  };
  return [main, ...(admin ? [admin] : []), ...(baseline ? [baseline] : [])];
}

/**
 * A pod sends only from its own addresses; and what comes from anywhere but a pod veth cannot
 * carry a source of this node's pods (their addresses, pinned and anycast ones included): those
 * packets can only be forged, and policies that trust a local pod's address must not see them.
 */
function antiSpoofing(): string[] {
  return [
    `\t\tiifname @pod_ifaces iifname . ip saddr != @pod_sources_v4 drop ${comment('anti-spoofing')}`,
    `\t\tiifname @pod_ifaces iifname . ip6 saddr != @pod_sources_v6 drop ${comment('anti-spoofing')}`,
    `\t\tiifname != @pod_ifaces ip saddr @node_sources_v4 counter drop ${comment('anti-spoofing: a local pod source from outside')}`,
    `\t\tiifname != @pod_ifaces ip6 saddr @node_sources_v6 counter drop ${comment('anti-spoofing: a local pod source from outside')}`,
  ];
}

/** Only in tables with egress ClusterNetworkPolicy rules (so others stay as they were). */
const EGRESS_ALLOWED_CHAIN: NftChain = {
  name: EGRESS_ALLOWED,
  hook: false,
  lines: [
    `\tchain ${EGRESS_ALLOWED} {`,
    `\t\t${comment('egress accepted by a ClusterNetworkPolicy: the destination ingress decides')}`,
    '\t\toifname vmap @ingress_pods',
    '\t\taccept',
    '\t}',
  ],
};

/** Input from local pods to the node's ports they may not reach (RenderOptions). */
function closedToPods(o: RenderOptions): string[] {
  const ports = [...new Set(o.nodePortsClosedToPods ?? [])].filter(
    (p) => Number.isInteger(p) && p > 0 && p < 65536,
  );
  return ports.length
    ? [
        `\t\tiifname @pod_ifaces tcp dport { ${ports.join(', ')} } counter drop ${comment('agent port: not for pods')}`,
      ]
    : [];
}

/**
 * The hooked chains. They change only with the options (the SNAT chain once the NodeConfig
 * says Private): a change of them replaces the whole table, atomically.
 */
const baseChains = (o: RenderOptions): NftChain[] => [
  ...HOST_PORT_CHAINS,
  ...snatChains(o.snat),
  {
    name: 'forward',
    hook: true,
    lines: [
      '\tchain forward {',
      '\t\ttype filter hook forward priority filter; policy accept;',
      ...antiSpoofing(),
      ...translatorForward(o.snat),
      '\t\tct state established,related accept',
      `\t\t${ICMP_ERRORS}`,
      `\t\t${ICMPV6_ERRORS}`,
      '\t\tiifname vmap @egress_pods',
      '\t\toifname vmap @ingress_pods',
      '\t}',
    ],
  },
  {
    name: 'input',
    hook: true,
    lines: [
      '\tchain input {',
      '\t\ttype filter hook input priority filter; policy accept;',
      ...neighbourDiscovery(),
      ...antiSpoofing(),
      ...closedToPods(o),
      ...translatorInput(o.snat),
      '\t\tct state established,related accept',
      `\t\t${ICMP_ERRORS}`,
      `\t\t${ICMPV6_ERRORS}`,
      '\t\tiifname vmap @egress_pods',
      '\t}',
    ],
  },
];

/**
 * An always empty set that a change (diff.ts) flushes before anything else: that fails when
 * the table is gone and otherwise changes nothing. The guard before (adding and deleting a
 * chain) deleted an object, and a deletion makes the kernel wait for the transaction's readers:
 * 10–20 ms per `nft` run, against 3.5 ms (docs/benchmarks/cni.md).
 */
export const GUARD_SET = 'flock_table_exists';

/** The table of an IR as data (sets and maps in declaration order, then the chains). */
export function renderTable(ir: NetpolIR, options: RenderOptions = {}): NftTable {
  const families: Families = new Map(
    [...ir.addressSets, ...ir.tupleSets].map((s) => [
      s.name,
      { v4: s.v4.length > 0, v6: s.v6.length > 0 },
    ]),
  );
  const q = (s: string) => `"${s}"`;
  const sets: NftSet[] = [
    set(
      'pod_ifaces',
      'ifname',
      undefined,
      'host side of every local pod veth',
      ir.pods.map((p) => q(p.interface)),
    ),
    set(
      'pod_sources_v4',
      'ifname . ipv4_addr',
      undefined,
      'addresses each pod may send from',
      ir.pods.flatMap((p) => p.sources.v4.map((a) => `${q(p.interface)} . ${a}`)),
    ),
    set(
      'pod_sources_v6',
      'ifname . ipv6_addr',
      undefined,
      'addresses each pod may send from',
      ir.pods.flatMap((p) => p.sources.v6.map((a) => `${q(p.interface)} . ${a}`)),
    ),
    set('node_sources_v4', 'ipv4_addr', undefined, "this node's pod sources: never from outside", [
      ...new Set(ir.pods.flatMap((p) => p.sources.v4)),
    ]),
    set('node_sources_v6', 'ipv6_addr', undefined, "this node's pod sources: never from outside", [
      ...new Set(ir.pods.flatMap((p) => p.sources.v6)),
    ]),
    map(
      'ingress_pods',
      ir.pods.flatMap((p) => (p.ingress ? [`${q(p.interface)} : jump ${ingressChain(p)}`] : [])),
    ),
    map(
      'egress_pods',
      ir.pods.flatMap((p) => (p.egress ? [`${q(p.interface)} : jump ${egressChain(p)}`] : [])),
    ),
    set(
      GUARD_SET,
      'ifname',
      undefined,
      'always empty: a change flushes it first and so fails when the table is gone',
      [],
    ),
    ...hostPortMaps(ir.pods),
  ];
  for (const s of ir.addressSets) {
    if (s.v4.length) sets.push(set(`${s.name}_v4`, 'ipv4_addr', 'interval', s.comment, s.v4));
    if (s.v6.length) sets.push(set(`${s.name}_v6`, 'ipv6_addr', 'interval', s.comment, s.v6));
  }
  for (const s of ir.portSets) {
    const flags = s.interval ? 'interval' : undefined;
    sets.push(set(s.name, 'inet_proto . inet_service', flags, undefined, s.elements));
  }
  for (const s of ir.tupleSets) {
    const type = (f: number) => `ipv${f}_addr . inet_proto . inet_service`;
    if (s.v4.length) sets.push(set(`${s.name}_v4`, type(4), undefined, s.comment, s.v4));
    if (s.v6.length) sets.push(set(`${s.name}_v6`, type(6), undefined, s.comment, s.v6));
  }
  const chains: NftChain[] = [];
  const shared = new Map<string, NftChain>();
  for (const pod of ir.pods) {
    for (const direction of ['ingress', 'egress'] as const) {
      const d = pod[direction];
      if (!d) continue;
      const [main, ...tiers] = podChains(pod, d, direction, families, options);
      chains.push(main as NftChain);
      for (const t of tiers) if (!shared.has(t.name)) shared.set(t.name, t);
    }
  }
  chains.push(...shared.values());
  if (
    [...shared.values()].some(
      (c) => c.name.startsWith('admin_egress_') || c.name.startsWith('baseline_egress_'),
    )
  )
    chains.push(EGRESS_ALLOWED_CHAIN);
  chains.push(...baseChains(options));
  const [podIfaces, podSourcesV4] = sets as [NftSet, NftSet];
  const guard = sets.find((s) => s.name === GUARD_SET) as NftSet;
  return { sets, chains, arp: arpGuard(podIfaces, podSourcesV4, guard) };
}

export const SCRIPT_HEADER =
  '# flock NetworkPolicy for this node (generated by @flock/netpol: do not edit)';

/** One table's replace: create-then-delete makes the delete safe when it is absent. */
function replaceLines(family: string, table: NftTable, note: string): string[] {
  const id = `${family} ${TABLE_NAME}`;
  return [
    `table ${id} {}`,
    `delete table ${id}`,
    `table ${id} {`,
    `\t${comment(note)}`,
    ...table.sets.flatMap(setLines),
    ...table.chains.flatMap((c) => c.lines),
    '}',
  ];
}

/** The whole script: each table is deleted and defined again in the same `nft -f` transaction,
 *  so packets see old or new, never none. */
export function tableScript(table: NftTable): string {
  return [
    SCRIPT_HEADER,
    ...replaceLines(TABLE_FAMILY, table, TABLE_COMMENT),
    ...(table.arp ? replaceLines(ARP_TABLE_FAMILY, table.arp, ARP_TABLE_COMMENT) : []),
    '',
  ].join('\n');
}

/** renderTable + tableScript: the full replace script of an IR. */
export function render(ir: NetpolIR): string {
  return tableScript(renderTable(ir));
}
