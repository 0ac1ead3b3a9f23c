// CIDR prefixes as numbers: parse, normalise, compare, containment, and indexing of the
// sub-prefixes of one length inside another (what carving and allocation count in).
import { splitCidr, type Family, type Parsed } from '@flock/api';
import { addressBits, formatAddress, parseAddress, type IpAddress } from './address.js';

export interface Prefix {
  readonly family: Family;
  /** The network address (host bits zero). */
  readonly network: bigint;
  readonly length: number;
}

interface ParsePrefixOptions {
  /** Mask host bits away instead of refusing them (e.g. "10.0.0.7/24" → 10.0.0.0/24). */
  allowHostBits?: boolean;
}

/** Bits of the prefix that vary between its addresses. */
export function hostBits(p: Prefix): number {
  return addressBits(p.family) - p.length;
}

/** Number of addresses in the prefix. */
export function prefixSize(p: Prefix): bigint {
  return 1n << BigInt(hostBits(p));
}

function maskOf(family: Family, length: number): bigint {
  const bits = BigInt(addressBits(family));
  const all = (1n << bits) - 1n;
  return all ^ ((1n << (bits - BigInt(length))) - 1n);
}

/** Parse "address/length". Host bits set are an error unless allowHostBits. */
export function parsePrefix(text: string, options: ParsePrefixOptions = {}): Parsed<Prefix> {
  const parts = splitCidr(text);
  const address = parts && parseAddress(parts.address);
  if (!parts || !address) {
    return { ok: false, error: `${JSON.stringify(text)} is not an IPv4 or IPv6 CIDR` };
  }
  const network = address.value & maskOf(address.family, parts.prefixLength);
  const prefix: Prefix = { family: address.family, network, length: parts.prefixLength };
  if (network !== address.value && !options.allowHostBits) {
    return {
      ok: false,
      error: `${JSON.stringify(text)} has host bits set: use the network address ${formatPrefix(prefix)}`,
    };
  }
  return { ok: true, value: prefix };
}

/** Canonical text: canonical network address, then the length. */
export function formatPrefix(p: Prefix): string {
  return `${formatAddress(p.family, p.network)}/${p.length}`;
}

/** Canonical text of a CIDR, or the reason it is not a valid network prefix. */
export function normalizeCidr(text: string, options: ParsePrefixOptions = {}): Parsed<string> {
  const parsed = parsePrefix(text, options);
  return parsed.ok ? { ok: true, value: formatPrefix(parsed.value) } : parsed;
}

/** Is the address inside the prefix? */
export function prefixContainsAddress(p: Prefix, a: IpAddress): boolean {
  return a.family === p.family && (a.value & maskOf(p.family, p.length)) === p.network;
}

/** Is the address text inside one of the CIDR texts? False for anything unparsable. */
export function cidrsContainIp(cidrs: readonly string[], ip: string): boolean {
  const address = parseAddress(ip);
  if (!address) return false;
  return cidrs.some((cidr) => {
    const p = parsePrefix(cidr);
    return p.ok && prefixContainsAddress(p.value, address);
  });
}

/** Is `inner` entirely inside `outer` (or equal to it)? */
export function prefixContains(outer: Prefix, inner: Prefix): boolean {
  return (
    outer.family === inner.family &&
    inner.length >= outer.length &&
    (inner.network & maskOf(outer.family, outer.length)) === outer.network
  );
}

/** Do the two prefixes share any address? */
export function prefixesOverlap(a: Prefix, b: Prefix): boolean {
  return prefixContains(a, b) || prefixContains(b, a);
}

/** The index-th prefix of `length` inside `outer` (index 0 starts at outer's network address). */
export function subPrefix(outer: Prefix, length: number, index: bigint | number): Prefix {
  const step = BigInt(addressBits(outer.family) - length);
  return { family: outer.family, network: outer.network + (BigInt(index) << step), length };
}

/** Index of `inner` among the prefixes of its length inside `outer`; undefined when not inside. */
export function subPrefixIndex(outer: Prefix, inner: Prefix): bigint | undefined {
  if (!prefixContains(outer, inner)) return undefined;
  return (inner.network - outer.network) >> BigInt(hostBits(inner));
}
