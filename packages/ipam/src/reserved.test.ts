import { describe, expect, it } from 'vitest';
import { parsePrefix, type Prefix } from './prefix.js';
import {
  isReservedInterfaceId,
  isReservedOffset,
  nextUnreservedOffset,
  reservedOffsets,
  usableCount,
} from './reserved.js';

const p = (text: string): Prefix => {
  const parsed = parsePrefix(text);
  if (!parsed.ok) throw new Error(parsed.error);
  return parsed.value;
};

describe('reserved interface IDs (RFC 5453)', () => {
  it('covers the subnet-router anycast, the IANA Ethernet block and the subnet anycast range', () => {
    for (const iid of [
      0n,
      0x0200_5eff_fe00_0000n,
      0x0200_5eff_fe00_5213n,
      0x0200_5eff_feff_ffffn,
      0xfdff_ffff_ffff_ff80n,
      0xfdff_ffff_ffff_ffffn,
    ]) {
      expect(isReservedInterfaceId(iid), iid.toString(16)).toBe(true);
    }
    for (const iid of [
      1n,
      0x0200_5eff_fdff_ffffn,
      0x0200_5eff_ff00_0000n,
      0xfdff_ffff_ffff_ff7fn,
      0xffff_ffff_ffff_ffffn,
    ]) {
      expect(isReservedInterfaceId(iid), iid.toString(16)).toBe(false);
    }
  });

  it('applies them to every /64 inside a shorter node prefix', () => {
    const r = reservedOffsets(p('2001:db8::/56'));
    expect(isReservedOffset(r, 1n << 64n)).toBe(true); // the second /64's subnet-router anycast
    expect(isReservedOffset(r, (5n << 64n) + 0xfdff_ffff_ffff_ff90n)).toBe(true);
    expect(isReservedOffset(r, (5n << 64n) + 7n)).toBe(false);
    expect(usableCount(r)).toBe(256n * ((1n << 64n) - 1n - 128n - (1n << 24n)));
  });

  it('reserves the all-zero and the highest 128 addresses of a prefix longer than /64 (RFC 2526)', () => {
    const r = reservedOffsets(p('2001:db8::/120'));
    expect(usableCount(r)).toBe(127n);
    expect(isReservedOffset(r, 0n)).toBe(true);
    expect(isReservedOffset(r, 127n)).toBe(false);
    expect(isReservedOffset(r, 128n)).toBe(true);
    expect(nextUnreservedOffset(r, 128n)).toBeUndefined();
  });

  it('reserves the first and last address of an IPv4 slice', () => {
    const r = reservedOffsets(p('192.0.2.0/28'));
    expect(usableCount(r)).toBe(14n);
    expect(nextUnreservedOffset(r, 0n)).toBe(1n);
    expect(nextUnreservedOffset(r, 15n)).toBeUndefined();
  });

  it('jumps over the 2^24 Ethernet block in one step', () => {
    const r = reservedOffsets(p('2001:db8::/64'));
    expect(nextUnreservedOffset(r, 0x0200_5eff_fe00_0001n)).toBe(0x0200_5eff_ff00_0000n);
    expect(nextUnreservedOffset(r, 0xfdff_ffff_ffff_ff80n)).toBe(0xfe00_0000_0000_0000n);
  });
});
