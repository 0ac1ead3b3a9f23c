// Host offsets inside a prefix that are never handed out to a pod.
//
// IPv6, 64-bit interface IDs (node prefix /64 or shorter), the IANA registry of RFC 5453:
//   0000:0000:0000:0000                        Subnet-Router anycast (RFC 4291)
//   0200:5EFF:FE00:0000 - 0200:5EFF:FEFF:FFFF  IANA Ethernet block, incl. Proxy MIPv6 (RFC 4291, 6543)
//   FDFF:FFFF:FFFF:FF80 - FDFF:FFFF:FFFF:FFFF  reserved subnet anycast (RFC 2526)
// applied to the low 64 bits of every address (a /56 holds 256 such IID spaces).
// IPv6, shorter interface IDs (node prefix longer than /64): the subnet-router anycast
// (all host bits zero) and the highest 128 addresses (RFC 2526, non-EUI-64 form).
// IPv4: the first (network) and last (broadcast) address of the slice.
import type { Prefix } from './prefix.js';
import { hostBits, prefixSize } from './prefix.js';

type Range = readonly [bigint, bigint];

export interface ReservedOffsets {
  /** Addresses in the prefix; offsets run from 0 to size - 1. */
  readonly size: bigint;
  /** The ranges repeat every `period` offsets. */
  readonly period: bigint;
  /** Sorted, disjoint, inclusive ranges of reserved offsets within one period. */
  readonly ranges: readonly Range[];
}

const IID_SPACE = 1n << 64n;
const RFC5453_IIDS: readonly Range[] = [
  [0n, 0n],
  [0x0200_5eff_fe00_0000n, 0x0200_5eff_feff_ffffn],
  [0xfdff_ffff_ffff_ff80n, 0xfdff_ffff_ffff_ffffn],
];

/** The reserved host offsets of a prefix. */
export function reservedOffsets(p: Prefix): ReservedOffsets {
  const size = prefixSize(p);
  if (p.family === 4) {
    return {
      size,
      period: size,
      ranges:
        size > 2n
          ? [
              [0n, 0n],
              [size - 1n, size - 1n],
            ]
          : [[0n, size - 1n]],
    };
  }
  if (hostBits(p) >= 64) return { size, period: IID_SPACE, ranges: RFC5453_IIDS };
  const anycastRange: Range = size > 129n ? [size - 128n, size - 1n] : [0n, size - 1n];
  return { size, period: size, ranges: size > 129n ? [[0n, 0n], anycastRange] : [anycastRange] };
}

/** Is this 64-bit IPv6 interface ID reserved by RFC 5453? */
export function isReservedInterfaceId(iid: bigint): boolean {
  return RFC5453_IIDS.some(([lo, hi]) => iid >= lo && iid <= hi);
}

function rangeAt(r: ReservedOffsets, offset: bigint): Range | undefined {
  const within = offset % r.period;
  return r.ranges.find(([lo, hi]) => within >= lo && within <= hi);
}

export function isReservedOffset(r: ReservedOffsets, offset: bigint): boolean {
  return rangeAt(r, offset) !== undefined;
}

/** The smallest unreserved offset >= offset, or undefined when there is none before the end. */
export function nextUnreservedOffset(r: ReservedOffsets, offset: bigint): bigint | undefined {
  let candidate = offset;
  while (candidate < r.size) {
    const hit = rangeAt(r, candidate);
    if (!hit) return candidate;
    // Jump past the whole range in one step: the Ethernet block alone is 2^24 addresses.
    candidate = candidate - (candidate % r.period) + hit[1] + 1n;
  }
  return undefined;
}

/** Addresses of the prefix that may be handed out. */
export function usableCount(r: ReservedOffsets): bigint {
  const perPeriod = r.ranges.reduce((sum, [lo, hi]) => sum + hi - lo + 1n, 0n);
  return r.size - perPeriod * (r.size / r.period);
}
