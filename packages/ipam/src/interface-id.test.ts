import { IpAlgo } from '@flock/api';
import { describe, expect, it } from 'vitest';
import {
  INTERFACE_ID_ALGORITHMS,
  interfaceIdAlgorithm,
  probeFree,
  randomOffset,
  stableOffset,
} from './interface-id.js';
import { parsePrefix } from './prefix.js';
import { reservedOffsets } from './reserved.js';

describe('interface-ID starts and the search for a free address', () => {
  it('takes random bits from the injected source, masked to the host width', () => {
    expect(randomOffset(64, (n) => new Uint8Array(n).fill(0xff))).toBe((1n << 64n) - 1n);
    expect(randomOffset(12, () => Uint8Array.from([0xab, 0xcd]))).toBe(0xbcdn);
  });

  it('derives the stable start from namespace/name only', () => {
    const a = stableOffset(64, 'default', 'web-0');
    expect(stableOffset(64, 'default', 'web-0')).toBe(a);
    expect(stableOffset(64, 'default', 'web-1')).not.toBe(a);
    expect(stableOffset(64, 'other', 'web-0')).not.toBe(a);
    expect(a < 1n << 64n).toBe(true);
    // First 64 bits of SHA-256("default/web-0").
    expect(a).toBe(0x53842afe623a6f1en);
  });

  const parsed = parsePrefix('192.0.2.0/29');
  if (!parsed.ok) throw new Error(parsed.error);
  const prefix29 = parsed.value;

  it('walks up from the start, skips reserved and taken offsets, wraps once', () => {
    const r = reservedOffsets(prefix29); // usable 1..6
    const taken = new Set([5n, 6n, 1n]);
    expect(probeFree(r, 5n, (o) => taken.has(o))).toBe(2n);
    expect(probeFree(r, 0n, (o) => taken.has(o))).toBe(2n);
    taken.add(2n).add(3n).add(4n);
    expect(probeFree(r, 3n, (o) => taken.has(o))).toBeUndefined();
  });
});

describe('the algorithm table', () => {
  it('has one record for every ip-algo the API accepts, and no other', () => {
    expect(Object.keys(INTERFACE_ID_ALGORITHMS).sort()).toEqual([...IpAlgo.options].sort());
  });

  it('refuses a name that is not an ip-algo instead of falling back to one', () => {
    for (const name of ['bogus', 'Sequential', 'constructor', ''])
      expect(() => interfaceIdAlgorithm(name as IpAlgo)).toThrow(/unknown ip-algo/);
  });
});
