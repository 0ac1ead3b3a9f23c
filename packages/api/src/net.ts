// Address and CIDR grammar shared by every schema. Validation only: prefix arithmetic
// (carving, allocation) lives in @flock/ipam.
import { isIPv4, isIPv6 } from 'node:net';
import { z } from 'zod';
import { withRules } from './rules.js';

export type Family = 4 | 6;

/** Longest address or CIDR text accepted (IPv6 with an embedded IPv4 and a /len fits). */
export const MAX_ADDRESS_LENGTH = 64;

export function ipFamily(ip: string): Family | undefined {
  if (isIPv4(ip)) return 4;
  // node:net accepts zone IDs ("fe80::1%eth0"); an address in a Kubernetes object never has one.
  if (isIPv6(ip) && !ip.includes('%')) return 6;
  return undefined;
}

/** Parse "addr/len" into its parts; undefined when it is not a CIDR of either family. */
export function splitCidr(
  cidr: string,
): { address: string; prefixLength: number; family: Family } | undefined {
  const slash = cidr.indexOf('/');
  if (slash < 0 || slash !== cidr.lastIndexOf('/')) return undefined;
  const address = cidr.slice(0, slash);
  const len = cidr.slice(slash + 1);
  const family = ipFamily(address);
  if (!family || !/^(0|[1-9][0-9]{0,2})$/.test(len)) return undefined;
  const prefixLength = Number(len);
  if (prefixLength > (family === 4 ? 32 : 128)) return undefined;
  return { address, prefixLength, family };
}

/** The address as a bigint (IPv4 in 32 bits, IPv6 in 128). Input must be a valid address. */
export function ipToBigInt(ip: string): bigint {
  if (isIPv4(ip))
    return ip.split('.').reduce((acc, octet) => (acc << 8n) | BigInt(Number(octet)), 0n);
  const [head = '', tail] = ip.split('::') as [string, string | undefined];
  const parse = (part: string): number[] =>
    part === ''
      ? []
      : part.split(':').flatMap((group) => {
          if (group.includes('.')) {
            const v4 = ipToBigInt(group);
            return [Number(v4 >> 16n), Number(v4 & 0xffffn)];
          }
          return [parseInt(group, 16)];
        });
  const left = parse(head);
  const right = tail === undefined ? [] : parse(tail);
  const groups = [...left, ...new Array<number>(8 - left.length - right.length).fill(0), ...right];
  return groups.reduce((acc, group) => (acc << 16n) | BigInt(group), 0n);
}

/** True when the CIDR's host bits are all zero (it names a network, not a host in it). */
export function isNetworkAddress(cidr: string): boolean {
  const parts = splitCidr(cidr);
  if (!parts) return false;
  const width = parts.family === 4 ? 32 : 128;
  const hostBits = BigInt(width - parts.prefixLength);
  return (ipToBigInt(parts.address) & ((1n << hostBits) - 1n)) === 0n;
}

/** The network bits of an address: its top `prefixLength` bits. */
function networkBits(address: string, family: Family, prefixLength: number): bigint {
  return ipToBigInt(address) >> BigInt((family === 4 ? 32 : 128) - prefixLength);
}

/**
 * Does CIDR `outer` contain CIDR `inner` (same family, at least as long, same network bits)?
 * As CEL's cidr(outer).containsCIDR(cidr(inner)); false when either is not a CIDR.
 */
export function cidrContains(outer: string, inner: string): boolean {
  const o = splitCidr(outer);
  const i = splitCidr(inner);
  if (!o || !i || o.family !== i.family || i.prefixLength < o.prefixLength) return false;
  return (
    networkBits(o.address, o.family, o.prefixLength) ===
    networkBits(i.address, i.family, o.prefixLength)
  );
}

/** Do two CIDRs share an address (one contains the other)? */
export const cidrsOverlap = (a: string, b: string): boolean =>
  cidrContains(a, b) || cidrContains(b, a);

/** Does the CIDR contain the address? As CEL's cidr(c).containsIP(ip). */
export const cidrContainsIp = (cidr: string, ip: string): boolean => {
  const family = ipFamily(ip);
  return family !== undefined && cidrContains(cidr, `${ip}/${family === 4 ? 32 : 128}`);
};

export function familyName(f?: Family): string {
  return f === 4 ? 'IPv4' : f === 6 ? 'IPv6' : 'IPv4 or IPv6';
}

const example = (f?: Family, cidr = false) =>
  f === 4 ? (cidr ? '192.0.2.0/24' : '192.0.2.1') : cidr ? '2001:db8::/48' : '2001:db8::1';

const celFamily = (f: Family | undefined, expr: string) =>
  f ? ` && ${expr}.family() == ${f}` : '';

/**
 * An IPv4-mapped IPv6 address (::ffff:a.b.c.d in any spelling). The API server's CEL (isIP,
 * isCIDR) refuses these, so the schemas that stand for CEL rules refuse them too.
 */
function isIPv4Mapped(ip: string): boolean {
  return ipFamily(ip) === 6 && ipToBigInt(ip) >> 32n === 0xffffn;
}

/** An address as CEL's isIP() takes it: either family, no IPv4-mapped IPv6. */
export const isIpAddress = (s: string): boolean => ipFamily(s) !== undefined && !isIPv4Mapped(s);

/** A CIDR as CEL's isCIDR() takes it: either family, no IPv4-mapped IPv6. */
export function isCidr(s: string): boolean {
  const p = splitCidr(s);
  return p !== undefined && !isIPv4Mapped(p.address);
}

/** Any IPv4 or IPv6 address (what objects flock only reads carry, e.g. a pod's podIPs). */
export const IpAddress = z
  .string()
  .refine((s) => ipFamily(s) !== undefined, 'must be an IPv4 or IPv6 address');

/** An IP address of the given family (or either), e.g. a BGP peer. */
export function ipString(what: string, family?: Family) {
  return withRules(z.string().min(1).max(MAX_ADDRESS_LENGTH), [
    {
      cel: `isIP(self)${celFamily(family, 'ip(self)')}`,
      message: `${what} must be an ${familyName(family)} address such as ${example(family)}`,
      check: (s) => {
        const f = ipFamily(s);
        return f !== undefined && (family === undefined || f === family) && !isIPv4Mapped(s);
      },
    },
  ]);
}

/** A CIDR naming a network (host bits zero) of the given family (or either). */
export function cidrString(what: string, family?: Family) {
  return withRules(z.string().min(1).max(MAX_ADDRESS_LENGTH), [
    {
      cel: `isCIDR(self)${celFamily(family, 'cidr(self).ip()')}`,
      message: `${what} must be an ${familyName(family)} CIDR such as ${example(family, true)}`,
      check: (s) => {
        const p = splitCidr(s);
        return (
          p !== undefined &&
          (family === undefined || p.family === family) &&
          !isIPv4Mapped(p.address)
        );
      },
    },
    {
      cel: '!isCIDR(self) || cidr(self).ip() == cidr(self).masked().ip()',
      message: `${what} has host bits set: use the network address of the prefix (e.g. ${example(family, true)})`,
      check: (s) => splitCidr(s) === undefined || isNetworkAddress(s),
    },
  ]);
}
