import { describe, expect, it } from 'vitest';
import { FAULT_POINTS, faultInjector, parseFaultSpec, type FaultPoint } from './faults.js';

describe('test-only fault spec', () => {
  it('arms named points, each on its n-th hit (default the first)', () => {
    expect([...parseFaultSpec('after-veth, store-before-rename#2,')]).toEqual([
      ['after-veth', 1],
      ['store-before-rename', 2],
    ]);
    expect(parseFaultSpec('').size).toBe(0);
  });

  it('refuses an unknown point or a bad count, naming the known ones', () => {
    expect(() => parseFaultSpec('after-vth')).toThrow(
      /unknown test fault point "after-vth".*after-veth/,
    );
    expect(() => parseFaultSpec('after-veth#0')).toThrow(/unknown/);
    expect(() => parseFaultSpec('after-veth;rm -rf')).toThrow(/unknown/);
  });

  it('fires once, at the armed hit of the armed point only', () => {
    const fired: FaultPoint[] = [];
    const hook = faultInjector(parseFaultSpec('store-before-rename#2'), (p) => fired.push(p));
    for (const p of [
      'store-before-rename',
      'after-veth',
      'store-before-rename',
      'store-before-rename',
    ] as const)
      void hook(p);
    expect(fired).toEqual(['store-before-rename']);
  });

  it('has unique names', () => {
    expect(new Set(FAULT_POINTS).size).toBe(FAULT_POINTS.length);
  });
});
