import { describe, expect, it } from 'vitest';
import { Backoff, KeyedBackoff, TokenBucket } from './backoff.js';
import type { Clock } from './clock.js';

describe('backoff', () => {
  it('doubles from base to max, and reset() starts over', () => {
    const b = new Backoff({ baseMs: 10, maxMs: 100 });
    expect(Array.from({ length: 6 }, () => b.next())).toEqual([10, 20, 40, 80, 100, 100]);
    b.reset();
    expect(b.next()).toBe(10);
  });

  it('jitter draws each delay from [d·(1−jitter), d]', () => {
    const draws = [0, 1, 0.5];
    let i = 0;
    const b = new Backoff({ baseMs: 100, maxMs: 1000, jitter: 0.4 }, () => draws[i++] as number);
    expect([b.next(), b.next(), b.next()]).toEqual([100, 200 * 0.6, 400 * 0.8]);
  });

  it('keeps one sequence per key', () => {
    const k = new KeyedBackoff({ baseMs: 5, maxMs: 1000 });
    expect([k.next('a'), k.next('a'), k.next('b'), k.next('a')]).toEqual([5, 10, 5, 20]);
    expect(k.failuresOf('a')).toBe(3);
    k.forget('a');
    expect(k.next('a')).toBe(5);
  });

  it('token bucket: a burst passes, then one token per 1/qps', () => {
    let now = 0;
    const clock: Clock = { now: () => now, setTimeout: () => 0, clearTimeout: () => {} };
    const t = new TokenBucket({ qps: 10, burst: 2 }, clock);
    expect([t.reserve(), t.reserve(), t.reserve(), t.reserve()]).toEqual([0, 0, 100, 200]);
    now = 1000; // refilled (capped at burst)
    expect([t.reserve(), t.reserve(), t.reserve()]).toEqual([0, 0, 100]);
    expect(() => new TokenBucket({ qps: 0, burst: 1 })).toThrow(/qps > 0/);
  });
});
