// One IP address as a number, and back to canonical text. The grammar (no zone IDs, no IPv4
// leading zeros) is @flock/api's; canonical text is ip-address's correctForm(), which is
// RFC 5952 for IPv6 (lower case, longest zero run compressed, first on a tie, never a lone 0).
import { Address4, Address6 } from 'ip-address';
import { ipFamily, ipToBigInt, type Family } from '@flock/api';

export interface IpAddress {
  readonly family: Family;
  readonly value: bigint;
}

/** Bits in an address of the family. */
export function addressBits(family: Family): 32 | 128 {
  return family === 4 ? 32 : 128;
}

/** Parse an IPv4 or IPv6 address; undefined when the text is not one. */
export function parseAddress(text: string): IpAddress | undefined {
  const family = ipFamily(text);
  return family ? { family, value: ipToBigInt(text) } : undefined;
}

/** Canonical text of an address value (dotted quad, or RFC 5952). */
export function formatAddress(family: Family, value: bigint): string {
  return family === 4
    ? Address4.fromBigInt(value).correctForm()
    : Address6.fromBigInt(value).correctForm();
}

/** Canonical text of an address; undefined when the text is not an address. */
export function canonicalAddress(text: string): string | undefined {
  const parsed = parseAddress(text);
  return parsed && formatAddress(parsed.family, parsed.value);
}

/** True when the text is an address written exactly in canonical form. */
export function isCanonicalAddress(text: string, family?: Family): boolean {
  const parsed = parseAddress(text);
  if (!parsed || (family !== undefined && parsed.family !== family)) return false;
  return formatAddress(parsed.family, parsed.value) === text;
}
