import { describe, expect, it } from 'vitest';
import { FAULT_POINTS } from '../src/core/faults.js';
import { addPoints, delPoints, nextRun, seededRandom } from './crash-plan.js';

const slots = [
  { attached: false, anycast: false },
  { attached: true, anycast: false },
  { attached: false, anycast: true },
];

describe('crash plan', () => {
  it('replays exactly with the same seed', () => {
    const a = seededRandom(7);
    const b = seededRandom(7);
    const runs = (r: () => number) => Array.from({ length: 50 }, () => nextRun(r, slots));
    expect(runs(a)).toEqual(runs(b));
  });

  it('arms only known points, anycast ones only on a pod with anycast addresses', () => {
    const random = seededRandom(1);
    for (let i = 0; i < 500; i++) {
      const run = nextRun(random, slots);
      expect(FAULT_POINTS).toContain(run.fault.replace(/#\d+$/, ''));
      if (run.fault.includes('anycast')) expect(run.slot).toBe(2);
      // A prepared command starts from the state it needs.
      const attached = slots[run.slot]!.attached;
      if (run.prepare) expect(run.prepare === 'add').toBe(!attached);
    }
  });

  it('shifts a store point past the two writes of the prepare step', () => {
    const random = seededRandom(3);
    const prepared = Array.from({ length: 500 }, () => nextRun(random, slots)).filter(
      (r) => r.prepare && r.fault.startsWith('store-'),
    );
    expect(prepared.length).toBeGreaterThan(0);
    for (const r of prepared) expect(Number(r.fault.split('#')[1])).toBeGreaterThanOrEqual(3);
  });

  it('covers every ADD and DEL point', () => {
    const random = seededRandom(11);
    const hit = new Set(Array.from({ length: 2000 }, () => nextRun(random, slots).fault));
    for (const p of [...addPoints(true), ...delPoints(true)])
      if (!p.startsWith('store-')) expect(hit).toContain(p);
  });
});
