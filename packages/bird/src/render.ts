// BirdModel → bird.conf for BIRD 2.0. Deterministic: addresses are canonicalised, de-duplicated
// and sorted, peers are sorted, nothing depends on time or input order, so the same model
// always gives the same bytes (the manager reloads BIRD only when the bytes change).
import { DEFAULT_BFD_TIMERS, ipFamily, ipToBigInt, splitCidr, type Family } from '@flock/api';
import { BirdModel, canonicalIp, formatIp, peerProtocolName, type BirdPeer } from './model.js';

/** Names of the protocols and filters the renderer writes (stable: the agent reads them back). */
export const BIRD_NAMES = {
  device: 'flock_device',
  bfd: 'flock_bfd',
  exportFilter: { 6: 'flock_export6', 4: 'flock_export4' },
  aggregates: { 6: 'flock_aggregates6', 4: 'flock_aggregates4' },
  pinned: { 6: 'flock_pinned6', 4: 'flock_pinned4' },
  anycast: { 6: 'flock_anycast6', 4: 'flock_anycast4' },
} as const;

const FAMILIES: readonly Family[] = [6, 4];
const CHANNEL = { 6: 'ipv6', 4: 'ipv4' } as const;

interface Prefix {
  family: Family;
  value: bigint;
  length: number;
  /** Canonical text, computed once: formatting dominates the cost of big models. */
  text: string;
}

function prefix(family: Family, value: bigint, length: number): Prefix {
  return { family, value, length, text: `${formatIp(value, family)}/${length}` };
}

function comparePrefixes(a: Prefix, b: Prefix): number {
  if (a.family !== b.family) return b.family - a.family; // IPv6 first
  if (a.value !== b.value) return a.value < b.value ? -1 : 1;
  return a.length - b.length;
}

/** Sorted, de-duplicated prefixes of one family, as text. */
function uniqueSorted(prefixes: readonly Prefix[], family: Family): string[] {
  const byText = new Map<string, Prefix>();
  for (const p of prefixes) if (p.family === family) byText.set(p.text, p);
  return [...byText.values()].sort(comparePrefixes).map((p) => p.text);
}

function cidrPrefix(cidr: string): Prefix {
  const parts = splitCidr(cidr);
  if (!parts) throw new Error(`not a CIDR: ${cidr}`); // unreachable after validation
  return prefix(parts.family, ipToBigInt(parts.address), parts.prefixLength);
}

function hostPrefix(ip: string): Prefix {
  const family = ipFamily(ip);
  if (!family) throw new Error(`not an address: ${ip}`); // unreachable after validation
  return prefix(family, ipToBigInt(ip), family === 6 ? 128 : 32);
}

type PerFamily = Record<Family, string[]>;

/** The model's prefixes by role and family, canonical, de-duplicated and sorted. */
function modelPrefixes(
  model: BirdModel,
): Record<'aggregates' | 'pinned' | 'anycast' | 'announced', PerFamily> {
  const aggregates = model.aggregates.map(cidrPrefix);
  const pinned = model.pinned.map(hostPrefix);
  const anycast = model.anycast.map(hostPrefix);
  const all = [...aggregates, ...pinned, ...anycast];
  const split = (ps: Prefix[]): PerFamily => ({ 6: uniqueSorted(ps, 6), 4: uniqueSorted(ps, 4) });
  return {
    aggregates: split(aggregates),
    pinned: split(pinned),
    anycast: split(anycast),
    announced: split(all),
  };
}

/** The exact prefixes the model announces, per family, in render order. */
export function announcedPrefixes(model: BirdModel): PerFamily {
  return modelPrefixes(model).announced;
}

function exportFilter(family: Family, prefixes: string[]): string[] {
  const name = BIRD_NAMES.exportFilter[family];
  if (prefixes.length === 0) {
    return [`filter ${name} {`, `  # Nothing to announce in IPv${family}.`, '  reject;', '}'];
  }
  return [
    `filter ${name} {`,
    '  if source = RTS_STATIC && net ~ [',
    ...prefixes.map((p, i) => `    ${p}${i < prefixes.length - 1 ? ',' : ''}`),
    '  ] then accept;',
    '  reject;',
    '}',
  ];
}

function staticProtocol(name: string, family: Family, prefixes: string[]): string[] {
  return [
    `protocol static ${name} {`,
    `  ${CHANNEL[family]};`,
    ...prefixes.map((p) => `  route ${p} blackhole;`),
    '}',
  ];
}

/** One BGP protocol: IPv6 peers carry both families (IPv4 with extended next hop), IPv4 peers IPv4. */
function bgpProtocol(peer: BirdPeer, asn: number): string[] {
  const address = canonicalIp(peer.address);
  const family = ipFamily(address) === 6 ? 6 : 4;
  const local = peer.sourceAddress
    ? `local ${canonicalIp(peer.sourceAddress)} as ${asn}`
    : `local as ${asn}`;
  const lines = [
    `protocol bgp ${peerProtocolName(address)} {`,
    `  description "flock peer ${address}";`,
    `  ${local};`,
    `  neighbor ${address} as ${peer.asn};`,
    peer.multihop === undefined ? '  direct;' : `  multihop ${peer.multihop};`,
  ];
  if (peer.holdTime !== undefined) lines.push(`  hold time ${peer.holdTime};`);
  // BIRD refuses a keepalive time when hold time 0 has switched keepalives off.
  if (peer.keepaliveTime !== undefined && peer.holdTime !== 0) {
    lines.push(`  keepalive time ${peer.keepaliveTime};`);
  }
  if (peer.connectDelayTime !== undefined)
    lines.push(`  connect delay time ${peer.connectDelayTime};`);
  if (peer.connectRetryTime !== undefined)
    lines.push(`  connect retry time ${peer.connectRetryTime};`);
  if (peer.errorWaitTime !== undefined) {
    lines.push(`  error wait time ${peer.errorWaitTime.min},${peer.errorWaitTime.max};`);
  }
  lines.push(`  graceful restart ${peer.gracefulRestart === false ? 'off' : 'on'};`);
  if (peer.bfd) {
    // Per-session timers (BIRD 2.0 `bfd { ... }` in the BGP protocol); flock's defaults, never BIRD's.
    const t = { ...DEFAULT_BFD_TIMERS, ...peer.bfdTimers };
    lines.push(
      `  bfd { min rx interval ${t.minRxIntervalMs} ms; min tx interval ${t.minTxIntervalMs} ms; multiplier ${t.multiplier}; };`,
    );
  }
  if (peer.password !== undefined) lines.push(`  password "${peer.password}";`);
  const channels: Family[] = family === 6 ? [6, 4] : [4];
  for (const f of channels) {
    lines.push(
      `  ${CHANNEL[f]} {`,
      '    import none;',
      `    export filter ${BIRD_NAMES.exportFilter[f]};`,
      '    next hop self;',
    );
    if (f === 4 && family === 6) lines.push('    extended next hop on;');
    lines.push('  };');
  }
  lines.push('}');
  return lines;
}

function comparePeers(a: BirdPeer, b: BirdPeer): number {
  return comparePrefixes(hostPrefix(a.address), hostPrefix(b.address));
}

/** Render bird.conf; the model is validated first, so nothing unchecked reaches the file. */
export function renderBirdConfig(input: BirdModel): string {
  const model = BirdModel.parse(input);
  const prefixes = modelPrefixes(model);
  const peers = [...model.peers].sort(comparePeers);
  const [filter6, filter4] = FAMILIES.map((f) => exportFilter(f, prefixes.announced[f]));
  const sections: string[][] = [
    [
      '# bird.conf for BIRD 2.0, generated by @flock/bird. Do not edit: the flock agent rewrites',
      '# this file (mode 0600, it may hold BGP passwords) and reloads BIRD when it changes.',
    ],
    [
      `router id ${canonicalIp(model.routerId)};`,
      'log stderr all;',
      'timeformat protocol iso long;',
    ],
    [
      '# Interface state only, for directly connected peers. There is no kernel protocol: BIRD',
      "# neither learns from nor writes to the node's routing tables (the agent owns them).",
      `protocol device ${BIRD_NAMES.device} {`,
      '}',
    ],
    [
      '# Export filters: only these exact prefixes (no longer or shorter ones), and only from',
      "# flock's static protocols below. Every other route is rejected, whatever its source.",
      ...(filter6 ?? []),
    ],
    filter4 ?? [],
    [
      "# The node's aggregates, pinned addresses of its live pods, anycast addresses of its Ready",
      '# pods. Blackhole routes inside BIRD only: they are never written to a kernel table.',
      ...staticProtocol(BIRD_NAMES.aggregates[6], 6, prefixes.aggregates[6]),
    ],
    staticProtocol(BIRD_NAMES.aggregates[4], 4, prefixes.aggregates[4]),
    ...FAMILIES.map((f) => staticProtocol(BIRD_NAMES.pinned[f], f, prefixes.pinned[f])),
    ...FAMILIES.map((f) => staticProtocol(BIRD_NAMES.anycast[f], f, prefixes.anycast[f])),
  ];
  if (peers.some((p) => p.bfd)) sections.push([`protocol bfd ${BIRD_NAMES.bfd} {`, '}']);
  peers.forEach((peer, i) => {
    const comment =
      i === 0
        ? ['# One session per peer: it announces through the export filters, imports nothing.']
        : [];
    sections.push([...comment, ...bgpProtocol(peer, model.asn)]);
  });
  return sections.map((lines) => lines.join('\n')).join('\n\n') + '\n';
}
