// Private IPv4 between nodes (docs/install.md, "IPv4 modes"): a second Tayga, stateless both
// ways (SIIT, RFC 7915), with the Pool's translation prefix and no dynamic pool. A pod's packet
// to a Private address of another node enters `flock46` (the pool's range is routed there) and
// leaves as IPv6 from PREFIX + source to PREFIX + destination; the destination node routes
// PREFIX + its slice into its own `flock46`, which hands the pod the packet with the sender's
// own private address. An IPv6 source outside the prefix has no IPv4 address here: Tayga drops
// it, so nothing but another node's translator reaches a pod this way.
import { ipToBigInt, splitCidr, type NodeConfigSpec } from '@flock/api';
import { formatAddress } from '@flock/ipam';
import {
  TaygaTranslator,
  type TranslatorEdge,
  type TranslatorOptions,
  type TranslatorProfile,
} from './translator.js';

/** The inter-node translator's TUN device. */
export const SIIT_IFACE = 'flock46';
/**
 * Its own IPv4 address: the source of the ICMP errors it sends pods (RFC 7600's IPv4 dummy
 * address, meant for exactly this); never routed to it.
 */
export const SIIT_IPV4 = '192.0.0.8';

/** What the inter-node translator runs with: the prefix, this node's slice, the pool's range. */
export interface InterNode {
  prefix: string;
  slice: string;
  clusterCIDRs: string[];
}

/** A Private node's inter-node translation, from its NodeConfig; none on any other node. */
export function interNodeOf(spec: NodeConfigSpec | undefined): InterNode | undefined {
  const v4 = spec?.ipv4;
  if (v4?.mode !== 'Private' || !v4.interNodePrefix || !spec?.cidr4) return undefined;
  return {
    prefix: v4.interNodePrefix,
    slice: spec.cidr4,
    clusterCIDRs: v4.clusterCIDRs ?? [spec.cidr4],
  };
}

/** PREFIX + an IPv4 range: the IPv6 range that stands for it (a /24 in a /96 is a /120). */
export function translatedRange(prefix: string, cidr4: string): string {
  const p = splitCidr(prefix);
  const c = splitCidr(cidr4);
  if (p?.family !== 6 || p.prefixLength !== 96 || c?.family !== 4)
    throw new Error(`no translation of ${JSON.stringify(cidr4)} in ${JSON.stringify(prefix)}`);
  return `${formatAddress(6, ipToBigInt(p.address) + ipToBigInt(c.address))}/${96 + c.prefixLength}`;
}

/**
 * tayga.conf of the inter-node translator. Values come from a parsed NodeConfig (zod: CIDRs of
 * the right family and length), one directive a line; the routes through the device are named
 * in a comment, so new ones make a new configuration and a fresh device.
 */
export function siitConfig(want: InterNode): string {
  return [
    '# Written by flock-agent from the NodeConfig (spec.ipv4.interNodePrefix); rewritten on every change.',
    `# routes: ${[...want.clusterCIDRs, translatedRange(want.prefix, want.slice)].join(' ')}`,
    `tun-device ${SIIT_IFACE}`,
    `ipv4-addr ${SIIT_IPV4}`,
    `prefix ${want.prefix}`,
    '',
  ].join('\n');
}

/**
 * An IPv4 range as its two halves: routed into the translator, they win over the range's own
 * blackhole (routing/blackholes.ts), which stays as the fallback: with no translator device
 * (Tayga missing, the device not made), private IPv4 is dropped, never sent unNATed.
 */
export function halves(cidr4: string): [string, string] {
  const c = splitCidr(cidr4);
  if (c?.family !== 4 || c.prefixLength > 31)
    throw new Error(`${JSON.stringify(cidr4)}: no IPv4 range to halve`);
  const base = ipToBigInt(c.address);
  const half = 1n << BigInt(31 - c.prefixLength);
  const len = c.prefixLength + 1;
  return [`${formatAddress(4, base)}/${len}`, `${formatAddress(4, base + half)}/${len}`];
}

/**
 * The device, the pool's range into it (other nodes' pods; this node's are routed to their
 * veths, and the rest of its slice is blackholed) and PREFIX + this slice into it from the fabric.
 */
export function siitCommands(want: InterNode, config: string, tayga: string): [string, string[]][] {
  return [
    [tayga, ['--mktun', '-c', config]],
    ['ip', ['link', 'set', SIIT_IFACE, 'up']],
    ...want.clusterCIDRs
      .flatMap(halves)
      .map((c): [string, string[]] => ['ip', ['route', 'replace', c, 'dev', SIIT_IFACE]]),
    ['ip', ['-6', 'route', 'replace', translatedRange(want.prefix, want.slice), 'dev', SIIT_IFACE]],
  ];
}

export const SIIT_PROFILE: TranslatorProfile<InterNode> = {
  name: 'inter-node IPv4',
  iface: SIIT_IFACE,
  file: 'siit',
  key: (want) => JSON.stringify(want),
  config: (want) => siitConfig(want),
  commands: siitCommands,
};

/** The node's inter-node translator of a Private pool's IPv4. */
export class InterNodeTranslator extends TaygaTranslator<InterNode> {
  constructor(edge: TranslatorEdge, o: TranslatorOptions) {
    super(edge, o, SIIT_PROFILE);
  }
}
