import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { DEFAULT_PREFIX_QUARANTINE_MS, PrefixCarver, type CarveInput } from './carve.js';
import { parsePrefix, prefixContains } from './prefix.js';

const NOW = 1_800_000_000_000;

function carver(input: Partial<CarveInput> = {}): PrefixCarver {
  const created = PrefixCarver.create({
    pool: 'default',
    cidr: '2001:db8:100::/48',
    nodePrefixLength: 64,
    assignments: new Map(),
    now: NOW,
    ...input,
  });
  if (!created.ok) throw new Error(created.error);
  return created.value;
}

const assigned = (result: ReturnType<PrefixCarver['assign']>) => {
  if (!result.ok) throw new Error(result.error.message);
  return result.prefix;
};

describe('PrefixCarver', () => {
  it('hands out the lowest free prefix, deterministically', () => {
    const c = carver();
    expect(assigned(c.assign('a'))).toBe('2001:db8:100::/64');
    expect(assigned(c.assign('b'))).toBe('2001:db8:100:1::/64');
    expect(carver().assign('z')).toEqual({
      ok: true,
      prefix: '2001:db8:100::/64',
      existing: false,
    });
  });

  it('keeps an existing assignment and fills the gaps around it', () => {
    const c = carver({ assignments: new Map([['b', '2001:db8:100:1::/64']]) });
    expect(c.assign('b')).toEqual({ ok: true, prefix: '2001:db8:100:1::/64', existing: true });
    expect(assigned(c.assign('a'))).toBe('2001:db8:100::/64');
    expect(assigned(c.assign('c'))).toBe('2001:db8:100:2::/64');
    expect(c.assign('a')).toEqual({ ok: true, prefix: '2001:db8:100::/64', existing: true });
  });

  it('skips prefixes still in quarantine and reuses them after it', () => {
    const quarantined = [{ prefix: '2001:db8:100::/64', until: NOW + 1 }];
    expect(assigned(carver({ quarantined }).assign('a'))).toBe('2001:db8:100:1::/64');
    expect(assigned(carver({ quarantined, now: NOW + 1 }).assign('a'))).toBe('2001:db8:100::/64');
  });

  it('carves IPv4 slices (/28s out of a /24)', () => {
    const c = carver({ cidr: '192.0.2.0/24', nodePrefixLength: 28 });
    expect(assigned(c.assign('a'))).toBe('192.0.2.0/28');
    expect(assigned(c.assign('b'))).toBe('192.0.2.16/28');
    expect(c.counts()).toEqual({ total: 16, allocated: 2, quarantined: 0, free: 14 });
  });

  it('reports exhaustion with the pool and the counts', () => {
    const c = carver({
      cidr: '192.0.2.0/26',
      nodePrefixLength: 28,
      assignments: new Map([
        ['a', '192.0.2.0/28'],
        ['b', '192.0.2.16/28'],
        ['c', '192.0.2.32/28'],
      ]),
      quarantined: [{ prefix: '192.0.2.48/28', until: NOW + 1000 }],
    });
    const result = c.assign('d');
    expect(result.ok).toBe(false);
    if (result.ok) return;
    expect(result.error).toMatchObject({
      code: 'Exhausted',
      pool: 'default',
      cidr: '192.0.2.0/26',
      counts: { total: 4, allocated: 3, quarantined: 1, free: 0 },
    });
    expect(result.error.message).toBe(
      'pool default: no free /28 left in IPv4 range 192.0.2.0/26 (4 in total: 3 assigned, 1 quarantined)',
    );
  });

  it('counts exactly up to 2^32 prefixes', () => {
    expect(carver({ cidr: '2001:db8::/32', nodePrefixLength: 64 }).counts()).toEqual({
      total: 2 ** 32,
      allocated: 0,
      quarantined: 0,
      free: 2 ** 32,
    });
  });

  it('refuses a pool it cannot carve', () => {
    const base = { pool: 'p', assignments: new Map<string, string>(), now: NOW };
    const bad = [
      { cidr: '2001:db8::/48', nodePrefixLength: 48 },
      { cidr: '2001:db8::/48', nodePrefixLength: 129 },
      { cidr: '2001:db8::/16', nodePrefixLength: 64 },
      { cidr: '2001:db8::1/48', nodePrefixLength: 64 },
    ];
    for (const b of bad) {
      const created = PrefixCarver.create({ ...base, ...b });
      expect(created.ok, JSON.stringify(b)).toBe(false);
      expect(created.ok || created.error).toMatch(/^pool p: /);
    }
  });

  it('reports assignments that do not fit the pool without moving them', () => {
    const c = carver({
      assignments: new Map([
        ['out', '2001:db8:200::/64'],
        ['short', '2001:db8:100::/56'],
        ['junk', 'not-a-cidr'],
        ['a', '2001:db8:100:5::/64'],
        ['dup', '2001:db8:100:5::/64'],
      ]),
    });
    expect(c.problems.map((p) => [p.node, p.reason])).toEqual([
      ['out', 'outside-pool'],
      ['short', 'wrong-length'],
      ['junk', 'invalid'],
      ['dup', 'duplicate'],
    ]);
    expect(c.assign('out')).toEqual({ ok: true, prefix: '2001:db8:200::/64', existing: true });
    expect(c.counts()).toMatchObject({ allocated: 1 });
  });
});

describe('quarantine', () => {
  it('holds a freed prefix for a day by default', () => {
    expect(DEFAULT_PREFIX_QUARANTINE_MS).toBe(86_400_000);
  });
});

describe('carving properties', () => {
  const pool = { pool: 'p', cidr: '10.0.0.0/22', nodePrefixLength: 28 } as const; // 64 slices
  const poolPrefix = parsePrefix(pool.cidr);

  it('never moves an assignment and never hands out a taken or quarantined prefix', () => {
    fc.assert(
      fc.property(
        fc.array(fc.oneof(fc.constant<'add'>('add'), fc.integer({ min: 0, max: 80 })), {
          maxLength: 120,
          size: 'max',
        }),
        (ops) => {
          let assignments = new Map<string, string>();
          let quarantined: { prefix: string; until: number }[] = [];
          let now = NOW;
          let counter = 0;
          for (const op of ops) {
            now += 1000;
            if (op === 'add') {
              const c = carver({ ...pool, assignments, quarantined, now });
              const result = c.assign(`n${counter++}`);
              if (!result.ok) {
                expect(c.counts().free).toBe(0);
                continue;
              }
              const taken = new Set([
                ...assignments.values(),
                ...quarantined.filter((q) => q.until > now).map((q) => q.prefix),
              ]);
              expect(taken.has(result.prefix)).toBe(false);
              const parsed = parsePrefix(result.prefix);
              expect(
                parsed.ok && poolPrefix.ok && prefixContains(poolPrefix.value, parsed.value),
              ).toBe(true);
              const before = new Map(assignments);
              assignments = new Map([...assignments, [`n${counter - 1}`, result.prefix]]);
              // Every earlier node still gets exactly what it had.
              const again = carver({ ...pool, assignments, quarantined, now });
              for (const [node, prefix] of before)
                expect(again.assign(node)).toEqual({ ok: true, prefix, existing: true });
            } else {
              const nodes = [...assignments.keys()];
              const node = nodes[op % Math.max(nodes.length, 1)];
              if (node === undefined) continue;
              const freed = assignments.get(node) as string;
              quarantined = [
                ...quarantined.filter((q) => q.until > now && q.prefix !== freed),
                { prefix: freed, until: now + 30_000 },
              ];
              assignments.delete(node);
            }
          }
        },
      ),
    );
  });

  it('carves 5,000 nodes one by one without moving anyone', () => {
    const c = carver();
    const seen = new Set<string>();
    for (let i = 0; i < 5000; i++) seen.add(assigned(c.assign(`node-${i}`)));
    expect(seen.size).toBe(5000);
    expect(c.assign('node-0')).toEqual({ ok: true, prefix: '2001:db8:100::/64', existing: true });
    expect(c.counts()).toEqual({ total: 65536, allocated: 5000, quarantined: 0, free: 60536 });
  });
});
