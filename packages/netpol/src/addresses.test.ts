import { describe, expect, it } from 'vitest';
import {
  cidrInterval,
  formatAddress,
  intervalElement,
  mergeIntervals,
  subtractIntervals,
} from './addresses.js';

describe('addresses', () => {
  it('formats IPv6 the RFC 5952 way', () => {
    expect(formatAddress(0n, 6)).toBe('::');
    expect(formatAddress(1n, 6)).toBe('::1');
    expect(formatAddress(0x20010db8000000000000000000000001n, 6)).toBe('2001:db8::1');
    expect(formatAddress(0x20010db8000000010000000000000001n, 6)).toBe('2001:db8:0:1::1');
    expect(formatAddress(0x20010db8000100000001000000000000n, 6)).toBe('2001:db8:1:0:1::');
    expect(formatAddress(0x20010db8000100010001000100010001n, 6)).toBe('2001:db8:1:1:1:1:1:1');
  });

  it('writes prefixes as prefixes and everything else as ranges', () => {
    const block = cidrInterval('10.1.0.0/16');
    expect(block && intervalElement(block.interval, 4)).toBe('10.1.0.0/16');
    expect(intervalElement({ lo: 10n, hi: 12n }, 4)).toBe('0.0.0.10-0.0.0.12');
    expect(intervalElement({ lo: 7n, hi: 7n }, 4)).toBe('0.0.0.7');
  });

  it('merges overlapping and adjacent intervals', () => {
    expect(
      mergeIntervals([
        { lo: 5n, hi: 9n },
        { lo: 1n, hi: 3n },
        { lo: 4n, hi: 4n },
        { lo: 20n, hi: 21n },
      ]),
    ).toEqual([
      { lo: 1n, hi: 9n },
      { lo: 20n, hi: 21n },
    ]);
  });

  it('subtracts cuts, including ones at the edges and overlapping ones', () => {
    expect(
      subtractIntervals({ lo: 0n, hi: 99n }, [
        { lo: 0n, hi: 9n },
        { lo: 50n, hi: 60n },
        { lo: 55n, hi: 70n },
        { lo: 90n, hi: 120n },
      ]),
    ).toEqual([
      { lo: 10n, hi: 49n },
      { lo: 71n, hi: 89n },
    ]);
    expect(subtractIntervals({ lo: 0n, hi: 9n }, [{ lo: 0n, hi: 9n }])).toEqual([]);
  });
});
