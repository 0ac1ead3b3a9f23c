// Tayga, the node's NAT64 translator (Debian's tayga): its configuration and the kernel steps
// around it, as argument arrays. Tayga is stateless per packet on a TUN device; each IPv6 source
// gets one address of its IPv4 pool (kept in data-dir/dynamic.map, so a restart maps every pod
// as before and conntrack's masquerade entries stay valid).
import { ipToBigInt, splitCidr, type Nat64 } from '@flock/api';
import { formatAddress } from '@flock/ipam';
import {
  TaygaTranslator,
  type TranslatorEdge,
  type TranslatorOptions,
  type TranslatorProfile,
} from './translator.js';

/** The translator's TUN device (persistent: routes and pods' flows survive a Tayga restart). */
export const NAT64_IFACE = 'flock64';
/**
 * Tayga's own IPv6 address: the source of the ICMPv6 errors it sends pods. Tayga needs one apart
 * from the prefix when the prefix is the well-known one and its IPv4 address is private; a ULA
 * that only this node routes, to the translator.
 */
export const TRANSLATOR_IPV6 = 'fd64:ff9b::1';

/** Tayga's own IPv4 address: the pool's first one (it answers pings to it, sends ICMP from it). */
export function translatorIpv4(pool: string): string {
  const parts = splitCidr(pool);
  if (parts?.family !== 4) throw new Error(`NAT64 pool ${JSON.stringify(pool)} is no IPv4 CIDR`);
  return formatAddress(4, ipToBigInt(parts.address) + 1n);
}

/** The IPv6 address a pod dials for an IPv4 one: the /96 prefix and the address (RFC 6052). */
export function nat64Address(prefix: string, ipv4: string): string {
  const parts = splitCidr(prefix);
  if (parts?.family !== 6 || parts.prefixLength !== 96 || splitCidr(`${ipv4}/32`)?.family !== 4)
    throw new Error(`no NAT64 address of ${JSON.stringify(ipv4)} in ${JSON.stringify(prefix)}`);
  return formatAddress(6, ipToBigInt(parts.address) + ipToBigInt(ipv4));
}

/**
 * tayga.conf for a NodeConfig's nat64. Every value comes from a parsed NodeConfig (zod: CIDRs of
 * the right family and length); one directive a line, so nothing can add a directive.
 */
export function taygaConfig(nat64: Nat64, dataDir: string): string {
  if (/\s/.test(dataDir)) throw new Error(`NAT64 data dir ${JSON.stringify(dataDir)}: no spaces`);
  return [
    '# Written by flock-agent from the NodeConfig (spec.nat64); rewritten on every change.',
    `tun-device ${NAT64_IFACE}`,
    `ipv4-addr ${translatorIpv4(nat64.pool)}`,
    `ipv6-addr ${TRANSLATOR_IPV6}`,
    `prefix ${nat64.prefix}`,
    `dynamic-pool ${nat64.pool}`,
    `data-dir ${dataDir}`,
    '',
  ].join('\n');
}

/** The commands that make the TUN device and route the prefix and the pool to it (idempotent). */
export function tunCommands(nat64: Nat64, config: string, tayga: string): [string, string[]][] {
  return [
    [tayga, ['--mktun', '-c', config]],
    ['ip', ['link', 'set', NAT64_IFACE, 'up']],
    ['ip', ['route', 'replace', nat64.pool, 'dev', NAT64_IFACE]],
    ['ip', ['-6', 'route', 'replace', nat64.prefix, 'dev', NAT64_IFACE]],
    ['ip', ['-6', 'route', 'replace', `${TRANSLATOR_IPV6}/128`, 'dev', NAT64_IFACE]],
  ];
}

/** NAT64's translator: restarted only when what Tayga runs with (prefix, pool) changes. */
export const NAT64_PROFILE: TranslatorProfile<Nat64> = {
  name: 'NAT64',
  iface: NAT64_IFACE,
  file: 'tayga',
  key: (want) => JSON.stringify({ prefix: want.prefix, pool: want.pool }),
  config: taygaConfig,
  commands: tunCommands,
};

/** The node's NAT64 translator (spec.nat64). */
export class Nat64Translator extends TaygaTranslator<Nat64> {
  constructor(edge: TranslatorEdge, o: TranslatorOptions) {
    super(edge, o, NAT64_PROFILE);
  }
}
