// BirdModel → bird.conf for BIRD 2.0. Deterministic: addresses are canonicalised, de-duplicated
// and sorted, peers are sorted, nothing depends on time or input order, so the same model
// always gives the same bytes (the manager reloads BIRD only when the bytes change).
import {
  DEFAULT_BFD_TIMERS,
  ipFamily,
  ipToBigInt,
  splitCidr,
  type Communities,
  type Family,
} from '@flock/api';
import { BirdModel, canonicalIp, formatIp, peerProtocolName, type BirdPeer } from './model.js';
import { CLASSES, tagStatements } from './render-communities.js';

/** Names of the protocols and filters the renderer writes (stable: the agent reads them back). */
export const BIRD_NAMES = {
  device: 'flock_device',
  bfd: 'flock_bfd',
  exportFilter: { 6: 'flock_export6', 4: 'flock_export4' },
  /** Only with a localPreference and iBGP peers: the export filters plus bgp_local_pref. */
  exportFilterIbgp: { 6: 'flock_export6_ibgp', 4: 'flock_export4_ibgp' },
  aggregates: { 6: 'flock_aggregates6', 4: 'flock_aggregates4' },
  pinned: { 6: 'flock_pinned6', 4: 'flock_pinned4' },
  anycast: { 6: 'flock_anycast6', 4: 'flock_anycast4' },
  services: { 6: 'flock_services6', 4: 'flock_services4' },
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
): Record<'aggregates' | 'pinned' | 'anycast' | 'services' | 'announced', PerFamily> {
  const aggregates = model.aggregates.map(cidrPrefix);
  const pinned = model.pinned.map(hostPrefix);
  const anycast = model.anycast.map(hostPrefix);
  const services = [
    ...(model.services ?? []).map(hostPrefix),
    ...(model.serviceRanges ?? []).map(cidrPrefix),
  ];
  const all = [...aggregates, ...pinned, ...anycast, ...services];
  const split = (ps: Prefix[]): PerFamily => ({ 6: uniqueSorted(ps, 6), 4: uniqueSorted(ps, 4) });
  return {
    aggregates: split(aggregates),
    pinned: split(pinned),
    anycast: split(anycast),
    services: split(services),
    announced: split(all),
  };
}

type ModelPrefixes = ReturnType<typeof modelPrefixes>;

/** The exact prefixes the model announces, per family, in render order. */
export function announcedPrefixes(model: BirdModel): PerFamily {
  return modelPrefixes(model).announced;
}

/**
 * Accept exactly `prefixes`, from static protocols only; `tags` run on what is accepted
 * (communities, local preference), indented for the `then { ... }` block.
 */
function exportFilter(name: string, family: Family, prefixes: string[], tags: string[]): string[] {
  if (prefixes.length === 0) {
    return [`filter ${name} {`, `  # Nothing to announce in IPv${family}.`, '  reject;', '}'];
  }
  return [
    `filter ${name} {`,
    '  if source = RTS_STATIC && net ~ [',
    ...prefixes.map((p, i) => `    ${p}${i < prefixes.length - 1 ? ',' : ''}`),
    ...(tags.length ? ['  ] then {', ...tags, '    accept;', '  }'] : ['  ] then accept;']),
    '  reject;',
    '}',
  ];
}

/** A pod's own communities by host prefix, for the host prefixes the model announces, sorted. */
function hostCommunities(
  model: BirdModel,
  hostPrefixes: readonly string[],
): Map<string, Communities> {
  const wanted = new Map<string, Communities>();
  for (const { address, standard, large } of model.addressCommunities ?? []) {
    const p = hostPrefix(address).text;
    const had = wanted.get(p);
    wanted.set(p, {
      standard: [...(had?.standard ?? []), ...(standard ?? [])],
      large: [...(had?.large ?? []), ...(large ?? [])],
    });
  }
  return new Map(hostPrefixes.flatMap((p) => (wanted.has(p) ? [[p, wanted.get(p)!]] : [])));
}

/** The export filters of one family: one for every peer, and one for iBGP peers when needed. */
function exportFilters(
  model: BirdModel,
  family: Family,
  prefixes: ModelPrefixes,
  ibgp: ReadonlySet<Family>,
): string[][] {
  const host = new Set([...prefixes.pinned[family], ...prefixes.anycast[family]]);
  const hostPrefixes = prefixes.announced[family].filter((p) => host.has(p));
  const tags = tagStatements({
    family,
    classes: BIRD_NAMES,
    communities: model.communities,
    present: new Set(CLASSES.filter((c) => prefixes[c][family].length > 0)),
    hostCommunities: hostCommunities(model, hostPrefixes),
  });
  const announced = prefixes.announced[family];
  const filters = [exportFilter(BIRD_NAMES.exportFilter[family], family, announced, tags)];
  if (ibgp.has(family) && model.localPreference !== undefined) {
    const local = [...tags, `    bgp_local_pref = ${model.localPreference};`];
    filters.push(exportFilter(BIRD_NAMES.exportFilterIbgp[family], family, announced, local));
  }
  return filters;
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
function bgpProtocol(peer: BirdPeer, asn: number, localPreference: boolean): string[] {
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
  const channels = channelsOf(peer);
  // iBGP peers get the local preference (eBGP ones would drop it anyway: RFC 4271 5.1.5).
  const useIbgpFilter = localPreference && peer.asn === asn;
  for (const f of channels) {
    lines.push(
      `  ${CHANNEL[f]} {`,
      '    import none;',
      `    export filter ${(useIbgpFilter ? BIRD_NAMES.exportFilterIbgp : BIRD_NAMES.exportFilter)[f]};`,
      '    next hop self;',
    );
    if (f === 4 && family === 6) lines.push('    extended next hop on;');
    lines.push('  };');
  }
  lines.push('}');
  return lines;
}

/** The channels of a peer's session: IPv6 peers carry both families, IPv4 peers IPv4. */
function channelsOf(peer: BirdPeer): Family[] {
  return ipFamily(peer.address) === 6 ? [6, 4] : [4];
}

/** Peers in numeric address order, IPv6 first: every config @flock/bird renders lists them so. */
export function comparePeers(a: BirdPeer, b: BirdPeer): number {
  return comparePrefixes(hostPrefix(a.address), hostPrefix(b.address));
}

/** Render bird.conf; the model is validated first, so nothing unchecked reaches the file. */
export function renderBirdConfig(input: BirdModel): string {
  const model = BirdModel.parse(input);
  const prefixes = modelPrefixes(model);
  const peers = [...model.peers].sort(comparePeers);
  // Families carried by iBGP sessions (an IPv6 session carries both): they get a filter of
  // their own when there is a local preference to set.
  const ibgp = new Set(peers.filter((p) => p.asn === model.asn).flatMap((p) => channelsOf(p)));
  const [filters6 = [], filters4 = []] = FAMILIES.map((f) =>
    exportFilters(model, f, prefixes, ibgp),
  );
  const [filter6 = [], ...ibgp6] = filters6;
  const [filter4 = [], ...ibgp4] = filters4;
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
      ...filter6,
    ],
    filter4,
    ...ibgp6,
    ...ibgp4,
    [
      "# The node's aggregates, pinned addresses of its live pods, anycast addresses of its Ready",
      '# pods. Blackhole routes inside BIRD only: they are never written to a kernel table.',
      ...staticProtocol(BIRD_NAMES.aggregates[6], 6, prefixes.aggregates[6]),
    ],
    staticProtocol(BIRD_NAMES.aggregates[4], 4, prefixes.aggregates[4]),
    ...FAMILIES.map((f) => staticProtocol(BIRD_NAMES.pinned[f], f, prefixes.pinned[f])),
    ...FAMILIES.map((f) => staticProtocol(BIRD_NAMES.anycast[f], f, prefixes.anycast[f])),
    // Only on nodes that announce Services: every other config stays as it was.
    ...(model.services?.length || model.serviceRanges?.length
      ? FAMILIES.map((f) => [
          ...(f === 6 ? ['# Service (LoadBalancer) addresses and the Service CIDRs.'] : []),
          ...staticProtocol(BIRD_NAMES.services[f], f, prefixes.services[f]),
        ])
      : []),
  ];
  if (peers.some((p) => p.bfd)) sections.push([`protocol bfd ${BIRD_NAMES.bfd} {`, '}']);
  peers.forEach((peer, i) => {
    const comment =
      i === 0
        ? ['# One session per peer: it announces through the export filters, imports nothing.']
        : [];
    sections.push([
      ...comment,
      ...bgpProtocol(peer, model.asn, model.localPreference !== undefined),
    ]);
  });
  return sections.map((lines) => lines.join('\n')).join('\n\n') + '\n';
}
