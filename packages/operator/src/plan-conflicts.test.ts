// planPool where pools meet: nodes two pools select, overlapping ranges, exhaustion,
// NodeConfigs that do not fit, prefixes held by other pools.
import { PoolConditions } from '@flock/api';
import { describe, expect, it } from 'vitest';
import { desiredNodeConfig } from './desired.js';
import { planPool } from './plan.js';
import {
  baseSpec,
  condition as cond,
  handWritten,
  HOUR,
  makeNode,
  makePool,
  planInput as input,
  someNodes as nodes,
  stored,
  T0,
} from '../testing/fixtures.js';
import { World } from '../testing/world.js';

describe('planPool: conflicts, overlaps, exhaustion, misfits', () => {
  it('a node two pools select stays with the pool its NodeConfig names, else goes to the older pool', () => {
    const older = makePool(
      'old',
      { ...baseSpec(), nodeSelector: { matchLabels: { zone: 'z' } } },
      { created: T0 },
    );
    const newer = makePool(
      'new',
      {
        ...baseSpec(),
        ipv6: { cidr: '2001:db8:200::/60', nodePrefixLength: 64 },
        nodeSelector: {},
      },
      { created: T0 + 1000 },
    );
    const both = makeNode('both', { zone: 'z' });
    const keeps = makeNode('keeps', { zone: 'z' });
    const existing = stored(desiredNodeConfig(newer, keeps, { cidr6: '2001:db8:200::/64' }));
    const common = { pools: [older, newer], nodes: [both, keeps], nodeConfigs: [existing] };
    const planOld = planPool(input({ pool: older, ...common }));
    const planNew = planPool(input({ pool: newer, ...common }));
    expect(planOld.apply.map((a) => a.node)).toEqual(['both']);
    expect(planNew.apply.map((a) => a.node)).toEqual([]);
    for (const plan of [planOld, planNew]) {
      const c = cond(plan.status.conditions, PoolConditions.NodeConflict);
      expect(c).toMatchObject({ status: 'True', reason: 'SelectedByOtherPools' });
      expect(c?.message).toContain('both (pools old, new; stays in old)');
      expect(c?.message).toContain('keeps (pools old, new; stays in new)');
      expect(plan.events).toEqual([
        expect.objectContaining({ type: 'Warning', reason: 'NodeConflict' }),
      ]);
    }
  });

  it('refuses the newer of two overlapping pools; the older keeps working', () => {
    const older = makePool('old', baseSpec(), { created: T0 });
    const newer = makePool(
      'new',
      {
        ...baseSpec(),
        ipv6: { cidr: '2001:db8:100::/56', nodePrefixLength: 64 },
        nodeSelector: { matchLabels: { pool: 'b' } },
      },
      { created: T0 + 1000 }, // creationTimestamp has whole seconds
    );
    const ns = [makeNode('a0', { pool: 'a' }), makeNode('b0', { pool: 'b' })];
    const planOld = planPool(input({ pool: older, pools: [older, newer], nodes: ns }));
    const planNew = planPool(input({ pool: newer, pools: [older, newer], nodes: ns }));
    expect(planOld.apply.map((a) => a.node)).toEqual(['a0']);
    expect(planNew.apply).toEqual([]);
    expect(cond(planNew.status.conditions, 'Ready')).toMatchObject({
      status: 'False',
      reason: 'Overlap',
    });
    expect(cond(planNew.status.conditions, PoolConditions.Overlap)?.message).toContain(
      '2001:db8:100::/56 overlaps 2001:db8:100::/60 (pool old)',
    );
    expect(cond(planOld.status.conditions, PoolConditions.Overlap)).toMatchObject({
      status: 'True',
      reason: 'NewerPoolRefused',
    });
    expect(cond(planOld.status.conditions, 'Ready')?.status).toBe('True');
    expect(planNew.events.map((e) => e.reason)).toEqual(['Overlap']);
  });

  it("treats one pool's node range inside another's pinned range as an overlap, shared anycast ranges not", () => {
    const a = makePool(
      'a',
      { ...baseSpec(), anycast: { cidrs: ['2001:db8:300::/120'] } },
      { created: T0 },
    );
    const b = makePool(
      'b',
      {
        ...baseSpec(),
        ipv6: { cidr: '2001:db8:200::/60', nodePrefixLength: 64 },
        anycast: { cidrs: ['2001:db8:300::/120'] },
      },
      { created: T0 + 1000 },
    );
    const c = makePool(
      'c',
      {
        ...baseSpec(),
        ipv6: { cidr: '2001:db8:400::/60', nodePrefixLength: 64 },
        pinned: { cidrs: ['2001:db8:200::/64'] },
      },
      { created: T0 + 2000 },
    );
    const pools = [a, b, c];
    expect(cond(planPool(input({ pool: b, pools })).status.conditions, 'Ready')?.status).toBe(
      'True',
    );
    expect(cond(planPool(input({ pool: c, pools })).status.conditions, 'Ready')?.reason).toBe(
      'Overlap',
    );
  });

  it("withdraws a newer pool's floating list that overlaps an older pool's, naming both ranges and pools", () => {
    const grant = { namespaceSelector: { matchLabels: { team: 'a' } } };
    const older = makePool(
      'old',
      { ...baseSpec(), anycast: { cidrs: ['2001:db8:300::/120'], grants: [grant] } },
      { created: T0 },
    );
    const newer = makePool(
      'new',
      {
        ...baseSpec(),
        nodeSelector: { matchLabels: { pool: 'b' } },
        ipv6: { cidr: '2001:db8:200::/60', nodePrefixLength: 64 },
        pinned: { cidrs: ['2001:db8:300::/124'], grants: [grant] },
        anycast: { cidrs: ['2001:db8:400::/120'] },
      },
      { created: T0 + 1000 },
    );
    const ns = [makeNode('a0', { pool: 'a' }), makeNode('b0', { pool: 'b' })];
    const pools = [older, newer];
    const planOld = planPool(input({ pool: older, pools, nodes: ns }));
    const planNew = planPool(input({ pool: newer, pools, nodes: ns }));
    // The newer pool still configures its nodes, without the clashing list (fail closed).
    expect(planNew.apply.map((a) => a.node)).toEqual(['b0']);
    const spec = planNew.apply[0]!.object.spec;
    expect(spec).not.toHaveProperty('pinnedCIDRs');
    expect(spec).not.toHaveProperty('pinnedGrants');
    expect(spec.anycastCIDRs).toEqual(['2001:db8:400::/120']);
    const why =
      'pinned range 2001:db8:300::/124 of pool new overlaps anycast range 2001:db8:300::/120 of pool old';
    expect(cond(planNew.status.conditions, PoolConditions.Overlap)).toMatchObject({
      status: 'True',
      reason: 'FloatingRangesWithdrawn',
      message: expect.stringContaining(why),
    });
    expect(cond(planNew.status.conditions, 'Ready')).toMatchObject({
      status: 'False',
      reason: 'FloatingOverlap',
      message: expect.stringContaining('without its pinned ranges'),
    });
    expect(planNew.events.map((e) => e.reason)).toEqual(['Overlap']);
    expect(planOld.apply[0]!.object.spec.anycastGrants).toEqual([grant]);
    expect(cond(planOld.status.conditions, PoolConditions.Overlap)).toMatchObject({
      reason: 'NewerPoolWithdrawn',
      message: expect.stringContaining(why),
    });
    expect(cond(planOld.status.conditions, 'Ready')?.status).toBe('True');
  });

  it('shares a floating range listed the same way with the same grants, and not otherwise', () => {
    const grant = { namespaceSelector: { matchLabels: { team: 'a' } } };
    const anycast = (grants: object[]) => ({ cidrs: ['2001:db8:300::/120'], grants });
    const a = makePool('a', { ...baseSpec(), anycast: anycast([grant]) }, { created: T0 });
    const b = (grants: object[]) =>
      makePool(
        'b',
        {
          ...baseSpec(),
          nodeSelector: { matchLabels: { pool: 'b' } },
          ipv6: { cidr: '2001:db8:200::/60', nodePrefixLength: 64 },
          anycast: anycast(grants),
        },
        { created: T0 + 1000 },
      );
    const overlap = (other: ReturnType<typeof b>) =>
      cond(planPool(input({ pool: other, pools: [a, other] })).status.conditions, 'Overlap');
    expect(overlap(b([grant]))?.status).toBe('False');
    expect(overlap(b([{ anyNamespace: true }]))).toMatchObject({
      status: 'True',
      reason: 'FloatingRangesWithdrawn',
    });
  });

  it('reports exhaustion as a condition and one event, and recovers when a prefix is freed and its quarantine passes', () => {
    const w = new World(HOUR);
    w.addPool('a', { ...baseSpec(), ipv6: { cidr: '2001:db8:100::/62', nodePrefixLength: 64 } });
    for (let i = 0; i < 5; i++) w.setNode(`n${i}`, { pool: 'a' });
    w.settle();
    expect(w.live()).toHaveLength(4);
    const status = w.pools.get('a')!.status!;
    expect(cond(status.conditions, PoolConditions.Exhausted)).toMatchObject({
      status: 'True',
      reason: 'NoFreePrefix',
    });
    expect(cond(status.conditions, PoolConditions.Exhausted)?.message).toContain(
      'no free /64 left',
    );
    expect(cond(status.conditions, 'Ready')).toMatchObject({
      status: 'False',
      reason: 'Exhausted',
    });
    expect(w.events.filter((e) => e.event.reason === 'Exhausted')).toHaveLength(1); // not per reconcile
    w.deleteNode('n0');
    w.settle();
    expect(w.configs.has('n4')).toBe(false); // n0's prefix is quarantined
    w.now += HOUR;
    w.settle();
    expect(w.configs.get('n4')?.spec.cidr6).toBe('2001:db8:100::/64');
    expect(cond(w.pools.get('a')!.status!.conditions, PoolConditions.Exhausted)?.status).toBe(
      'False',
    );
    expect(w.events.map((e) => e.event.reason)).toContain('PrefixesAvailable');
  });

  it('reports NodeConfigs whose prefixes do not fit the pool and leaves them untouched', () => {
    const pool = makePool('a', { ...baseSpec(), ipAlgo: 'random' });
    const outside = handWritten('n0', { pool: 'a', cidr6: '2001:db8:999::/64' });
    const dupA = stored(
      desiredNodeConfig(makePool('a'), makeNode('n1', { pool: 'a' }), {
        cidr6: '2001:db8:100:5::/64',
      }),
    );
    const dupB = handWritten('n2', { pool: 'a', cidr6: '2001:db8:100:5::/64' });
    const plan = planPool(input({ pool, nodes: nodes(3), nodeConfigs: [outside, dupA, dupB] }));
    expect(plan.apply.map((a) => a.node)).toEqual(['n1']); // only the annotation; the misfits are left alone
    const c = cond(plan.status.conditions, PoolConditions.PrefixMismatch);
    expect(c).toMatchObject({ status: 'True', reason: 'AssignmentsDoNotFit' });
    expect(c?.message).toContain('2001:db8:999::/64 is outside 2001:db8:100::/60');
    expect(c?.message).toContain('2001:db8:100:5::/64 is also assigned to another node');
  });

  it('keeps lastTransitionTime while a condition keeps its status', () => {
    const w = new World();
    w.addPool('a', baseSpec());
    w.setNode('n0', { pool: 'a' });
    w.settle();
    const t = cond(w.pools.get('a')!.status!.conditions, 'Ready')!.lastTransitionTime;
    w.now += HOUR;
    w.setNode('n1', { pool: 'a' });
    w.settle();
    const ready = cond(w.pools.get('a')!.status!.conditions, 'Ready')!;
    expect(ready.lastTransitionTime).toBe(t);
    expect(ready.message).toBe('2 of 2 selected node(s) have a NodeConfig of this pool');
  });
});

describe('planPool: prefixes held elsewhere', () => {
  it("never hands out a prefix inside its range that another pool's NodeConfig holds", () => {
    const pool = makePool('a', {
      ...baseSpec(),
      ipv6: { cidr: '2001:db8:100::/63', nodePrefixLength: 64 },
    });
    const foreign = handWritten('x', { pool: 'deleted-pool', cidr6: '2001:db8:100::/64' });
    const plan = planPool(input({ pool, nodes: nodes(2), nodeConfigs: [foreign] }));
    expect(plan.apply.map((a) => a.object.spec.cidr6)).toEqual(['2001:db8:100:1::/64']);
    expect(cond(plan.status.conditions, PoolConditions.Exhausted)?.status).toBe('True');
    expect(plan.status.ipv6).toEqual({ total: 2, allocated: 1, quarantined: 1, free: 0 });
  });
});

describe('planPool: quarantine across pools', () => {
  it('never hands out a prefix another pool quarantined, when a range moves between pools', () => {
    const w = new World(2 * HOUR);
    w.addPool('a', { ...baseSpec(), ipv6: { cidr: '2001:db8:100::/61', nodePrefixLength: 64 } });
    w.addPool(
      'b',
      {
        ...baseSpec(),
        nodeSelector: { matchLabels: { pool: 'b' } },
        ipv6: { cidr: '2001:db8:200::/61', nodePrefixLength: 64 },
      },
      1000,
    );
    w.setNode('n0', { pool: 'a' });
    w.settle();
    expect(w.configs.get('n0')?.spec.cidr6).toBe('2001:db8:100::/64');
    w.editPool('a', (s) => {
      s.ipv6 = { cidr: '2001:db8:300::/61', nodePrefixLength: 64 };
      s.nodeSelector = { matchLabels: { zone: 'z' } };
    });
    w.settle(); // n0 left a: its NodeConfig is gone, the prefix is in a's quarantine
    expect(w.pools.get('a')?.status?.quarantine?.map((q) => q.prefix)).toEqual([
      '2001:db8:100::/64',
    ]);
    w.editPool('b', (s) => {
      s.ipv6 = { cidr: '2001:db8:100::/61', nodePrefixLength: 64 };
      s.nodeSelector = { matchLabels: { pool: 'a' } };
    });
    w.settle();
    expect(w.configs.get('n0')?.spec).toMatchObject({ pool: 'b', cidr6: '2001:db8:100:1::/64' });
    expect(w.pools.get('b')?.status?.ipv6).toMatchObject({ allocated: 1, quarantined: 1 });
  });
});
