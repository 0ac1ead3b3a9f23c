// Address arithmetic for nftables interval sets: CIDRs as [lo, hi] intervals, union,
// subtraction (ipBlock except) and the shortest element text for each interval.
import { ipFamily, ipToBigInt, splitCidr, type Family } from '@flock/api';

export interface Interval {
  lo: bigint;
  hi: bigint;
}

export const WIDTH: Record<Family, number> = { 4: 32, 6: 128 };

/** A CIDR as an interval; host bits are ignored (10.0.0.1/24 is 10.0.0.0/24, as Kubernetes reads it). */
export function cidrInterval(cidr: string): { family: Family; interval: Interval } | undefined {
  const parts = splitCidr(cidr);
  if (!parts) return undefined;
  const hostBits = BigInt(WIDTH[parts.family] - parts.prefixLength);
  const lo = (ipToBigInt(parts.address) >> hostBits) << hostBits;
  return { family: parts.family, interval: { lo, hi: lo + (1n << hostBits) - 1n } };
}

/** A single address as a one-element interval. */
export function addressInterval(ip: string): { family: Family; interval: Interval } | undefined {
  const family = ipFamily(ip);
  if (!family) return undefined;
  const n = ipToBigInt(ip);
  return { family, interval: { lo: n, hi: n } };
}

export function contains(outer: Interval, inner: Interval): boolean {
  return outer.lo <= inner.lo && inner.hi <= outer.hi;
}

/** Sorted, non-overlapping, non-adjacent intervals covering the same addresses. */
export function mergeIntervals(list: readonly Interval[]): Interval[] {
  const sorted = [...list].sort((a, b) => (a.lo < b.lo ? -1 : a.lo > b.lo ? 1 : 0));
  const out: Interval[] = [];
  for (const iv of sorted) {
    const last = out[out.length - 1];
    if (last && iv.lo <= last.hi + 1n) {
      if (iv.hi > last.hi) last.hi = iv.hi;
    } else {
      out.push({ lo: iv.lo, hi: iv.hi });
    }
  }
  return out;
}

/** `base` minus every interval of `cuts`. */
export function subtractIntervals(base: Interval, cuts: readonly Interval[]): Interval[] {
  const out: Interval[] = [];
  let cursor = base.lo;
  for (const cut of mergeIntervals(cuts)) {
    if (cut.hi < cursor || cut.lo > base.hi) continue;
    if (cut.lo > cursor) out.push({ lo: cursor, hi: cut.lo - 1n });
    cursor = cut.hi + 1n;
    if (cursor > base.hi) return out;
  }
  if (cursor <= base.hi) out.push({ lo: cursor, hi: base.hi });
  return out;
}

/** Canonical text of an address (IPv6 lower-case, longest zero run compressed). */
export function formatAddress(n: bigint, family: Family): string {
  if (family === 4) {
    return [24n, 16n, 8n, 0n].map((shift) => Number((n >> shift) & 0xffn)).join('.');
  }
  const groups: number[] = [];
  for (let shift = 112n; shift >= 0n; shift -= 16n) groups.push(Number((n >> shift) & 0xffffn));
  // RFC 5952: compress the longest run (first one on ties) of two or more zero groups.
  let bestStart = -1;
  let bestLen = 1;
  for (let i = 0; i < 8;) {
    if (groups[i] !== 0) {
      i++;
      continue;
    }
    let j = i;
    while (j < 8 && groups[j] === 0) j++;
    if (j - i > bestLen) {
      bestStart = i;
      bestLen = j - i;
    }
    i = j;
  }
  const hex = groups.map((g) => g.toString(16));
  if (bestStart < 0) return hex.join(':');
  return `${hex.slice(0, bestStart).join(':')}::${hex.slice(bestStart + bestLen).join(':')}`;
}

/** nft element text for an interval: an address, a prefix when it is one, else a range. */
export function intervalElement(iv: Interval, family: Family): string {
  if (iv.lo === iv.hi) return formatAddress(iv.lo, family);
  const size = iv.hi - iv.lo + 1n;
  // A prefix is a power-of-two sized block aligned on its size.
  if ((size & (size - 1n)) === 0n && iv.lo % size === 0n) {
    const bits = size.toString(2).length - 1;
    return `${formatAddress(iv.lo, family)}/${WIDTH[family] - bits}`;
  }
  return `${formatAddress(iv.lo, family)}-${formatAddress(iv.hi, family)}`;
}
