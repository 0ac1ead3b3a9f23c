import { describe, expect, it } from 'vitest';
import { ObjectsByKey } from './objects-by-key.js';

interface Obj {
  name: string;
  v: number;
}

describe('ObjectsByKey', () => {
  it('holds namespaced and cluster-scoped keys as a map would', () => {
    const m = new ObjectsByKey<Obj>((o) => o.name);
    m.set('shop/web', { name: 'web', v: 1 });
    m.set('shop/db', { name: 'db', v: 2 });
    m.set('node-a', { name: 'node-a', v: 3 });
    m.set('shop/web', { name: 'web', v: 4 }); // replaced, not added
    expect(m.size).toBe(3);
    expect(m.get('shop/web')?.v).toBe(4);
    expect([m.has('node-a'), m.has('shop/node-a'), m.has('other/web')]).toEqual([
      true,
      false,
      false,
    ]);
    expect(m.keys().sort()).toEqual(['node-a', 'shop/db', 'shop/web']);
    expect([...m.entries()].map(([k, o]) => `${k}=${o.v}`).sort()).toEqual([
      'node-a=3',
      'shop/db=2',
      'shop/web=4',
    ]);
    m.delete('shop/web');
    m.delete('shop/web'); // twice: once counted
    m.delete('shop/db');
    expect([m.size, m.values().map((o) => o.v)]).toEqual([1, [3]]);
  });

  it('keys by the object’s own name only when it is the key’s name', () => {
    // An object whose name is not its key's (a caller's mistake) is still found by its key.
    const m = new ObjectsByKey<Obj>((o) => o.name);
    m.set('shop/web', { name: 'other', v: 1 });
    expect(m.get('shop/web')?.v).toBe(1);
    expect(m.get('shop/other')).toBeUndefined();
  });
});
