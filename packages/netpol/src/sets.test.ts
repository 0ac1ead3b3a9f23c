import { describe, expect, it } from 'vitest';
import { cidrInterval, intervalElement, mergeIntervals } from './addresses.js';
import { extendPeers, type CachedSet } from './sets.js';

function cached(cidrs: string[]): CachedSet {
  const merged = mergeIntervals(cidrs.map((c) => cidrInterval(c)?.interval ?? { lo: 0n, hi: 0n }));
  return {
    v4: merged.map((iv) => intervalElement(iv, 4)),
    v6: [],
    source: { namespace: '', peers: [] },
    intervals: { 4: merged, 6: [] },
  };
}
const ip = (text: string) => cidrInterval(`${text}/32`)?.interval.lo ?? 0n;

describe('extendPeers: a cached peer set gaining addresses', () => {
  it('adds elements in order, merging neighbours, keeping the text of the others', () => {
    const set = cached(['10.0.0.1/32', '10.0.0.8/30', '10.0.1.0/24']);
    const next = extendPeers(set, { 4: [ip('10.0.0.5'), ip('10.0.0.12'), ip('10.0.0.0')], 6: [] });
    expect(next.v4).toEqual(['10.0.0.0/31', '10.0.0.5', '10.0.0.8-10.0.0.12', '10.0.1.0/24']);
    expect(next.v4[3]).toBe(set.v4[2]);
    expect(next.v6).toBe(set.v6);
    expect(set.v4).toEqual(['10.0.0.1', '10.0.0.8/30', '10.0.1.0/24']); // not modified
  });

  it('addresses it holds already leave it as it is', () => {
    const set = cached(['10.0.1.0/24']);
    expect(extendPeers(set, { 4: [ip('10.0.1.7')], 6: [] })).toBe(set);
  });
});
