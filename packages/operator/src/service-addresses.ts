// Address arithmetic of Service ranges: which addresses of a range are handed out on their own
// (not an IPv4 range's network and broadcast address, not an IPv6 range's all-zero
// subnet-router anycast address: routers and hosts treat those specially), the lowest one not
// taken, and how many a range holds. A Service that asks for one of the left-out addresses by
// name gets it: they are left out of automatic assignment only.
import {
  addressBits,
  formatAddress,
  parseAddress,
  parsePrefix,
  prefixContainsAddress,
  prefixSize,
  type Prefix,
} from '@flock/ipam';

/** The first and last offset of a range that automatic assignment hands out. */
function usable(p: Prefix): { first: bigint; last: bigint } {
  const size = prefixSize(p);
  const hostBits = addressBits(p.family) - p.length;
  if (p.family === 4 && hostBits >= 2) return { first: 1n, last: size - 2n };
  if (p.family === 6 && hostBits >= 2) return { first: 1n, last: size - 1n };
  return { first: 0n, last: size - 1n };
}

const prefixes = (cidrs: readonly string[]): Prefix[] =>
  cidrs.flatMap((c) => {
    const p = parsePrefix(c);
    return p.ok ? [p.value] : [];
  });

/**
 * The lowest address of the ranges (in their order) that automatic assignment hands out and
 * that is not in `taken` (address values of the ranges' family); undefined when none is left.
 * The walk visits at most one address per taken one, whatever the size of the range.
 */
export function lowestFree(
  cidrs: readonly string[],
  taken: ReadonlySet<bigint>,
): string | undefined {
  for (const p of prefixes(cidrs)) {
    const { first, last } = usable(p);
    for (let offset = first; offset <= last; offset++) {
      const value = p.network + offset;
      if (!taken.has(value)) return formatAddress(p.family, value);
    }
  }
  return undefined;
}

/** Is the address inside one of the ranges? */
export function inRanges(ip: string, cidrs: readonly string[]): boolean {
  const a = parseAddress(ip);
  return a !== undefined && prefixes(cidrs).some((p) => prefixContainsAddress(p, a));
}

/** Addresses automatic assignment hands out from the ranges (exact; may exceed 2^53). */
export function usableCount(cidrs: readonly string[]): bigint {
  return prefixes(cidrs).reduce((sum, p) => {
    const { first, last } = usable(p);
    return sum + (last - first + 1n);
  }, 0n);
}

/** A count as a status number: exact up to 2^53 - 1, capped there. */
export const capped = (n: bigint): number =>
  n > BigInt(Number.MAX_SAFE_INTEGER) ? Number.MAX_SAFE_INTEGER : Number(n);
