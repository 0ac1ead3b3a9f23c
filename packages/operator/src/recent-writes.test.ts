import { describe, expect, it } from 'vitest';
import { olderThan, RecentWrites } from './recent-writes.js';

const obj = (name: string, rv: string, v = rv) => ({ metadata: { name, resourceVersion: rv }, v });

describe('RecentWrites', () => {
  it('compares etcd revisions as numbers', () => {
    expect(olderThan('9', '10')).toBe(true);
    expect(olderThan('10', '9')).toBe(false);
    expect(olderThan(undefined, '1')).toBe(true);
    expect(olderThan('abc', '1')).toBe(false);
  });

  it('lays what was written over a lagging cache until the cache catches up', () => {
    const w = new RecentWrites<ReturnType<typeof obj>>();
    w.record(obj('a', '12'));
    w.record(obj('new', '13'));
    expect(w.get('a', obj('a', '10'))?.v).toBe('12'); // cache is behind
    expect(w.overlay([obj('a', '10'), obj('b', '5')]).map((o) => o.v)).toEqual(['12', '5', '13']);
    w.observe(obj('a', '11')); // an older event arriving late changes nothing
    expect(w.get('a', obj('a', '11'))?.v).toBe('12');
    w.observe(obj('a', '12'));
    expect(w.size).toBe(1);
    expect(w.get('a', obj('a', '14'))?.v).toBe('14');
  });

  it('never replaces a newer write by an older one, and drops entries the cache has passed', () => {
    const w = new RecentWrites<ReturnType<typeof obj>>();
    w.record(obj('a', '20'));
    w.record(obj('a', '15'));
    expect(w.get('a', undefined)?.v).toBe('20');
    expect(w.get('a', obj('a', '21'))?.v).toBe('21');
    expect(w.size).toBe(0);
  });
});
