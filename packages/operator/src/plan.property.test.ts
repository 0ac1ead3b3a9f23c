// Property: whatever happens to nodes, labels, pools and time, the plans carried out by the
// miniature cluster never move an existing NodeConfig's prefixes (World enforces the CRD's
// transition rules and throws), never give one prefix to two NodeConfigs, and never hand
// out a freed prefix before its quarantine has passed.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { baseSpec, type PoolSpecInput } from '../testing/fixtures.js';
import { World } from '../testing/world.js';

const HOUR = 3_600_000;
const QUARANTINE = 2 * HOUR;

const LABELS: Record<string, string>[] = [
  { pool: 'a' },
  { pool: 'b' },
  { pool: 'a', rack: 'r1' },
  { pool: 'a', zone: 'z' },
  {},
  { zone: 'z' },
];
const SELECTORS: { matchLabels?: Record<string, string> }[] = [
  { matchLabels: { pool: 'a' } },
  { matchLabels: { zone: 'z' } },
  {},
  { matchLabels: { pool: 'b' } },
];
const RANGES = ['2001:db8:100::/61', '2001:db8:100::/60', '2001:db8:200::/62', '2001:db8:300::/61'];

const specA = (): PoolSpecInput => ({
  ...baseSpec(),
  ipv6: { cidr: RANGES[0]!, nodePrefixLength: 64 },
});
const specB = (): PoolSpecInput => ({
  ...baseSpec(),
  nodeSelector: SELECTORS[3],
  ipv6: { cidr: '2001:db8:200::/61', nodePrefixLength: 64 },
});

type Op =
  | { op: 'node'; i: number; labels: number }
  | { op: 'deleteNode'; i: number }
  | { op: 'deleteConfig'; i: number }
  | { op: 'selector'; pool: 'a' | 'b'; s: number }
  | { op: 'range'; pool: 'a' | 'b'; r: number }
  | { op: 'ipv4'; pool: 'a' | 'b'; on: boolean }
  | { op: 'peers'; pool: 'a' | 'b' }
  | { op: 'time'; ms: number }
  | { op: 'reconcile'; pool: 'a' | 'b' };

const pool = fc.constantFrom<'a' | 'b'>('a', 'b');
const node = fc.integer({ min: 0, max: 7 });
const op: fc.Arbitrary<Op> = fc.oneof(
  {
    weight: 5,
    arbitrary: fc.record({
      op: fc.constant('node' as const),
      i: node,
      labels: fc.integer({ min: 0, max: LABELS.length - 1 }),
    }),
  },
  { weight: 2, arbitrary: fc.record({ op: fc.constant('deleteNode' as const), i: node }) },
  { weight: 1, arbitrary: fc.record({ op: fc.constant('deleteConfig' as const), i: node }) },
  {
    weight: 1,
    arbitrary: fc.record({
      op: fc.constant('selector' as const),
      pool,
      s: fc.integer({ min: 0, max: SELECTORS.length - 1 }),
    }),
  },
  {
    weight: 2,
    arbitrary: fc.record({
      op: fc.constant('range' as const),
      pool,
      r: fc.integer({ min: 0, max: RANGES.length - 1 }),
    }),
  },
  { weight: 1, arbitrary: fc.record({ op: fc.constant('ipv4' as const), pool, on: fc.boolean() }) },
  { weight: 1, arbitrary: fc.record({ op: fc.constant('peers' as const), pool }) },
  {
    weight: 2,
    arbitrary: fc.record({
      op: fc.constant('time' as const),
      ms: fc.integer({ min: 0, max: QUARANTINE * 1.5 }),
    }),
  },
  { weight: 3, arbitrary: fc.record({ op: fc.constant('reconcile' as const), pool }) },
);

function run(w: World, o: Op): void {
  switch (o.op) {
    case 'node':
      return w.setNode(`n${o.i}`, LABELS[o.labels]!);
    case 'deleteNode':
      return w.deleteNode(`n${o.i}`);
    case 'deleteConfig':
      return w.deleteConfig(`n${o.i}`);
    case 'selector':
      return w.editPool(o.pool, (s) => void (s.nodeSelector = SELECTORS[o.s]));
    case 'range':
      return w.editPool(
        o.pool,
        (s) => void (s.ipv6 = { cidr: RANGES[o.r]!, nodePrefixLength: 64 }),
      );
    case 'ipv4':
      return w.editPool(o.pool, (s) => {
        const cidr = o.pool === 'a' ? '192.0.2.0/26' : '198.51.100.0/26';
        if (o.on) s.ipv4 = { cidr, nodePrefixLength: 28 };
        else delete s.ipv4;
      });
    case 'peers':
      return w.editPool(o.pool, (s) => void (s.bgp.peers = (s.bgp.peers ?? []).slice(0, 1)));
    case 'time':
      w.now += o.ms;
      return;
    case 'reconcile':
      void w.reconcile(o.pool);
      return;
  }
}

function checkInvariants(w: World): void {
  // One prefix, one NodeConfig (being deleted or not).
  const owners = new Map<string, string>();
  for (const nc of w.configs.values()) {
    for (const p of [nc.spec.cidr6, nc.spec.cidr4]) {
      if (!p) continue;
      const other = owners.get(p);
      expect(other, `${p} is held by ${other} and ${nc.metadata.name}`).toBeUndefined();
      owners.set(p, nc.metadata.name);
    }
  }
  // No prefix handed out while it was quarantined.
  for (const h of w.handedOut) {
    const early = w.freed.find(
      (f) => f.prefix === h.prefix && f.seq < h.seq && h.at < f.at + QUARANTINE,
    );
    expect(
      early,
      `${h.prefix} handed to ${h.node} at ${h.at}, freed at ${early?.at}`,
    ).toBeUndefined();
  }
}

describe('planPool property', () => {
  it('never moves, duplicates, or reuses a quarantined prefix', () => {
    fc.assert(
      fc.property(fc.array(op, { minLength: 1, maxLength: 40 }), (ops) => {
        const w = new World(QUARANTINE);
        w.addPool('a', specA());
        w.addPool('b', specB(), 1000);
        for (const o of ops) {
          run(w, o);
          checkInvariants(w);
        }
        w.settle();
        checkInvariants(w);
        // Settled: every node that one non-refused pool selects has a NodeConfig (or waits
        // for a freed prefix, or for its old NodeConfig to go) — and the pool's status says so.
        for (const name of ['a', 'b']) {
          const ready = w.pools.get(name)?.status?.conditions?.find((c) => c.type === 'Ready');
          expect(ready).toBeDefined();
        }
      }),
      {
        numRuns: 1000,
        examples: [
          // Found by this property: a range moving to another pool while one of its prefixes
          // was quarantined in the first pool's status.
          [
            [
              { op: 'node', i: 0, labels: 0 },
              { op: 'selector', pool: 'b', s: 0 },
              { op: 'reconcile', pool: 'a' },
              { op: 'range', pool: 'a', r: 2 },
              { op: 'range', pool: 'b', r: 0 },
              { op: 'selector', pool: 'a', s: 1 },
            ],
          ],
        ],
      },
    );
  });

  it('hands out each prefix at most once within a quarantine even when nodes churn constantly', () => {
    fc.assert(
      fc.property(
        fc.array(fc.tuple(node, fc.boolean()), { minLength: 10, maxLength: 60 }),
        (churn) => {
          const w = new World(QUARANTINE);
          w.addPool('a', { ...specA(), nodeSelector: {} });
          for (const i of [0, 1, 2]) w.setNode(`n${i}`, {});
          for (const [i, add] of churn) {
            if (add) w.setNode(`n${i}`, {});
            else w.deleteNode(`n${i}`);
            w.settle();
            w.now += HOUR / 4;
            checkInvariants(w);
          }
          expect(w.handedOut.length).toBeGreaterThan(0);
        },
      ),
      { numRuns: 100 },
    );
  });
});
