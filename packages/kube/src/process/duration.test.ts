import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { formatDuration, parseDuration } from './duration.js';

describe('parseDuration', () => {
  it.each([
    ['24h', 86_400_000],
    ['90s', 90_000],
    ['1h30m', 5_400_000],
    ['500ms', 500],
    ['1.5s', 1_500],
    ['1m1ms', 60_001],
    ['0', 0],
    ['0s', 0],
  ])('%s = %i ms', (text, ms) => expect(parseDuration(text)).toBe(ms));

  it.each(['', '10', 'h', '5 m', '-1s', '1d', '1.s', 's1', '1h 30m', '1us'])('refuses %j', (text) =>
    expect(parseDuration(text)).toBeUndefined(),
  );

  it('reads back every duration it writes, in the fewest parts', () => {
    fc.assert(
      fc.property(fc.nat({ max: 1000 * 86_400_000 }), (ms) => {
        const text = formatDuration(ms);
        expect(parseDuration(text)).toBe(ms);
        expect(text).toMatch(/^(0|(\d+h)?([1-5]?\dm)?([1-5]?\ds)?(\d{1,3}ms)?)$/);
      }),
    );
  });

  it('adds up the parts in any order and size, as Go does', () => {
    const part = fc.tuple(fc.nat({ max: 10_000 }), fc.constantFrom('h', 'm', 's', 'ms'));
    const size = { h: 3_600_000, m: 60_000, s: 1_000, ms: 1 } as const;
    fc.assert(
      fc.property(fc.array(part, { minLength: 1, maxLength: 5 }), (parts) => {
        const text = parts.map(([n, u]) => `${n}${u}`).join('');
        expect(parseDuration(text)).toBe(parts.reduce((sum, [n, u]) => sum + n * size[u], 0));
      }),
    );
  });

  it('writes the usual ones as people do', () => {
    expect([0, 500, 2_000, 180_000, 600_000, 5_400_000, 86_400_000].map(formatDuration)).toEqual([
      '0',
      '500ms',
      '2s',
      '3m',
      '10m',
      '1h30m',
      '24h',
    ]);
    expect(() => formatDuration(-1)).toThrow(RangeError);
    expect(() => formatDuration(1.5)).toThrow(RangeError);
  });
});
