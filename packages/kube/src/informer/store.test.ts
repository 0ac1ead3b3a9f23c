import { describe, expect, it } from 'vitest';
import { IndexedStore } from './store.js';

interface Thing {
  node?: string;
  tags?: string[];
}

const keysUnder = (store: IndexedStore<Thing>, index: string, value: string) =>
  store.byIndex(index, value).length;

describe('IndexedStore', () => {
  it('an object leaves the index it entered, even when a handler mutated it since', () => {
    const store = new IndexedStore<Thing>({ node: (t) => (t.node ? [t.node] : []) });
    const a: Thing = { node: 'n1' };
    store.set('ns/a', a);
    store.set('ns/b', { node: 'n1' });
    a.node = 'n2'; // mutated in place after it was indexed
    store.delete('ns/a');
    expect(keysUnder(store, 'node', 'n1')).toBe(1);
    expect(store.indexValues('node')).toEqual(['n1']);

    const b = store.get('ns/b') as Thing;
    delete b.node; // now names no value at all
    store.set('ns/b', { node: 'n3' });
    expect(store.indexValues('node')).toEqual(['n3']);
  });

  it('objects under several values, or none, leave every one of them', () => {
    const store = new IndexedStore<Thing>({
      node: (t) => (t.node ? [t.node] : []),
      tag: (t) => t.tags ?? [],
    });
    const a: Thing = { node: 'n1', tags: ['x', 'y'] };
    store.set('a', a);
    store.set('b', {});
    a.tags = ['z'];
    store.set('a', { node: 'n2' });
    expect(store.indexValues('tag')).toEqual([]);
    expect(store.indexValues('node')).toEqual(['n2']);
    store.delete('b');
    store.delete('a');
    expect(store.indexValues('node')).toEqual([]);
    expect(store.size).toBe(0);
  });

  it('an index function that throws leaves the object out of that index, and it still leaves', () => {
    const errors: string[] = [];
    let fail = false;
    const store = new IndexedStore<Thing>(
      {
        node: (t) => {
          if (fail) throw new Error('boom');
          return t.node ? [t.node] : [];
        },
      },
      (index) => errors.push(index),
    );
    store.set('a', { node: 'n1' });
    fail = true;
    store.delete('a'); // the function throws now: the key is looked for
    expect(store.indexValues('node')).toEqual([]);
    store.set('b', { node: 'n1' });
    expect(errors).toEqual(['node']);
    expect(store.indexValues('node')).toEqual([]);
  });
});
