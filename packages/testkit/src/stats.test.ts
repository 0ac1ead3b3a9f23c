import { describe, expect, it } from 'vitest';
import { summarize, table } from './stats.js';

describe('bench stats', () => {
  it('nearest-rank percentiles', () => {
    const ms = Array.from({ length: 200 }, (_, i) => i + 1); // 1..200
    expect(summarize(ms)).toEqual({ n: 200, p50: 100, p99: 198, max: 200 });
    expect(summarize([7])).toEqual({ n: 1, p50: 7, p99: 7, max: 7 });
    expect(summarize([]).p50).toBeNaN();
  });

  it('a table row per candidate with ratios to each reference', () => {
    const out = table(
      'ADD',
      [
        { name: 'a', ms: [10, 20] },
        { name: 'ref', ms: [20, 40] },
      ],
      ['ref', 'missing'],
    );
    const lines = out.split('\n');
    expect(lines).toContain('| a | 2 | 10.0 | 20.0 | 20.0 | ×0.500 | ×0.500 | — | — |');
    expect(lines).toContain('| ref | 2 | 20.0 | 40.0 | 40.0 | ×1.000 | ×1.000 | — | — |');
  });
});
