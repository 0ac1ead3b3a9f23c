import { describe, expect, it } from 'vitest';
import { Interner } from './interner.js';

describe('Interner', () => {
  it('shares one value per key, keeps no long key, and starts over when full', () => {
    const table = new Interner<object>(2, 8);
    const a = table.get('a', () => ({ v: 1 }));
    expect(table.get('a', () => ({ v: 2 }))).toBe(a);
    const long = table.get('x'.repeat(9), () => ({}));
    expect(table.get('x'.repeat(9), () => ({}))).not.toBe(long);
    table.get('b', () => ({}));
    expect(table.size).toBe(2);
    table.get('c', () => ({})); // full: starts over
    expect(table.size).toBe(1);
    expect(table.get('a', () => ({ v: 3 }))).toEqual({ v: 3 });
  });
});
