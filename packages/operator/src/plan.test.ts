import { IP_ALGO_ANNOTATION } from '@flock/api';
import { describe, expect, it } from 'vitest';
import { desiredNodeConfig } from './desired.js';
import { QUARANTINE_FINALIZER } from './names.js';
import { planOrphans, planPool } from './plan.js';
import {
  baseSpec,
  condition as cond,
  handWritten,
  HOUR,
  iso,
  makeNode,
  makePool,
  planInput as input,
  someNodes as nodes,
  stored,
  T0,
} from '../testing/fixtures.js';
import { World } from '../testing/world.js';

describe('planPool: new nodes', () => {
  it('gives every selected node a NodeConfig with the lowest free prefixes, its peers, owner and finalizer', () => {
    const pool = makePool('a', {
      ...baseSpec(),
      ipAlgo: 'stable',
      anycast: { cidrs: ['2001:db8:300::/120'] },
    });
    const ns = [
      ...nodes(4),
      makeNode('r1-node', { pool: 'a', rack: 'r1' }, { created: T0 + 10 }),
      makeNode('other', { pool: 'b' }),
    ];
    const plan = planPool(input({ pool, nodes: ns }));
    expect(plan.apply.map((a) => [a.node, a.object.spec.cidr6, a.created])).toEqual([
      ['n0', '2001:db8:100::/64', true],
      ['n1', '2001:db8:100:1::/64', true],
      ['n2', '2001:db8:100:2::/64', true],
      ['n3', '2001:db8:100:3::/64', true],
      ['r1-node', '2001:db8:100:4::/64', true],
    ]);
    const r1 = plan.apply[4]!.object;
    expect(r1.spec.bgp.peers.map((p) => p.address)).toEqual([
      '2001:db8:ffff::1',
      '2001:db8:ffff::2',
    ]);
    expect(plan.apply[0]!.object.spec.bgp.peers.map((p) => p.address)).toEqual([
      '2001:db8:ffff::1',
    ]);
    expect(r1.spec.anycastCIDRs).toEqual(['2001:db8:300::/120']);
    expect(r1.metadata.annotations).toEqual({ [IP_ALGO_ANNOTATION]: 'stable' });
    expect(r1.metadata.ownerReferences).toEqual([
      {
        apiVersion: 'v1',
        kind: 'Node',
        name: 'r1-node',
        uid: 'uid-node-r1-node',
        blockOwnerDeletion: true,
      },
    ]);
    expect(r1.metadata.finalizers).toEqual([QUARANTINE_FINALIZER]);
    expect(plan.status).toMatchObject({
      nodes: 5,
      observedGeneration: 1,
      ipv6: { total: 16, allocated: 5, free: 11, quarantined: 0 },
    });
    expect(cond(plan.status.conditions, 'Ready')).toMatchObject({
      status: 'True',
      reason: 'Reconciled',
      observedGeneration: 1,
    });
  });

  it('carves IPv4 slices too, and adds one to existing NodeConfigs when the pool gains an ipv4 range', () => {
    const v6only = makePool('a');
    const existing = stored(
      desiredNodeConfig(v6only, makeNode('n0', { pool: 'a' }), { cidr6: '2001:db8:100:7::/64' }),
    );
    const pool = makePool('a', {
      ...baseSpec(),
      ipv4: { cidr: '192.0.2.0/26', nodePrefixLength: 28 },
    });
    const plan = planPool(input({ pool, nodes: nodes(2), nodeConfigs: [existing] }));
    expect(
      plan.apply.map((a) => [a.node, a.object.spec.cidr6, a.object.spec.cidr4, a.created]),
    ).toEqual([
      ['n0', '2001:db8:100:7::/64', '192.0.2.0/28', false],
      ['n1', '2001:db8:100::/64', '192.0.2.16/28', true],
    ]);
    expect(plan.status.ipv4).toEqual({ total: 4, allocated: 2, quarantined: 0, free: 2 });
  });

  it('carves /28 public and /24 private IPv4 slices when the pool does not say', () => {
    const carve = (ipv4: object) =>
      planPool(
        input({ pool: makePool('a', { ...baseSpec(), ipv4 } as never), nodes: nodes(1) }),
      ).apply.map((a) => a.object.spec.cidr4);
    expect(carve({ cidr: '192.0.2.0/24' })).toEqual(['192.0.2.0/28']);
    expect(carve({ cidr: '10.20.0.0/16', mode: 'Private' })).toEqual(['10.20.0.0/24']);
  });

  it('is idempotent: a cluster that says what the plan wants gets no writes and the same status', () => {
    const w = new World();
    w.addPool('a', baseSpec());
    for (let i = 0; i < 5; i++) w.setNode(`n${i}`, { pool: 'a' });
    w.settle();
    const pool = w.pools.get('a')!;
    const again = planPool(
      input({
        pool,
        nodes: [...w.nodes.values()],
        nodeConfigs: [...w.configs.values()],
        now: w.now,
      }),
    );
    expect(again.apply).toEqual([]);
    expect(again.delete).toEqual([]);
    expect(again.release).toEqual([]);
    expect(again.status).toEqual(pool.status);
    expect(again.events).toEqual([]);
  });

  it('updates peers and the ip-algo annotation of existing NodeConfigs but never their prefixes', () => {
    const w = new World();
    w.addPool('a', baseSpec());
    w.setNode('n0', { pool: 'a' });
    w.settle();
    const before = w.configs.get('n0')!.spec.cidr6;
    w.editPool('a', (s) => {
      s.bgp.peers = [{ address: '2001:db8:ffff::9', asn: 65009 }];
      s.ipAlgo = 'sequential';
      s.ipv6 = { cidr: '2001:db8:100::/56', nodePrefixLength: 64 };
    });
    w.settle();
    const nc = w.configs.get('n0')!;
    expect(nc.spec.cidr6).toBe(before);
    expect(nc.spec.bgp.peers).toEqual([{ address: '2001:db8:ffff::9', asn: 65009 }]);
    expect(nc.metadata.annotations?.[IP_ALGO_ANNOTATION]).toBe('sequential');
  });
});

describe('planPool: nodes leaving, quarantine', () => {
  it('deletes the NodeConfig of a node that stops matching, quarantines its prefix when it is released', () => {
    const w = new World(2 * HOUR);
    w.addPool('a', baseSpec());
    w.setNode('n0', { pool: 'a' });
    w.setNode('n1', { pool: 'a' });
    w.settle();
    const freedPrefix = w.configs.get('n0')!.spec.cidr6;
    w.setNode('n0', { pool: 'none' });
    w.reconcile('a');
    expect(w.configs.get('n0')?.metadata.deletionTimestamp).toBeDefined(); // held by the finalizer
    const plan = w.reconcile('a')!;
    expect(plan.release).toEqual([expect.objectContaining({ name: 'n0', finalizers: [] })]);
    expect(w.configs.has('n0')).toBe(false);
    expect(w.pools.get('a')!.status!.quarantine).toEqual([
      { prefix: freedPrefix, node: 'n0', until: new Date(w.now + 2 * HOUR).toISOString() },
    ]);
    expect(plan.requeueAfterMs).toBe(HOUR); // the earliest expiry (2 h), capped at an hour
    // A new node does not get the quarantined prefix...
    w.setNode('n2', { pool: 'a' });
    w.settle();
    expect(w.configs.get('n2')!.spec.cidr6).not.toBe(freedPrefix);
    // ...until the quarantine has expired and been pruned.
    w.now += 2 * HOUR;
    w.settle();
    expect(w.pools.get('a')!.status!.quarantine).toBeUndefined();
    w.setNode('n3', { pool: 'a' });
    w.settle();
    expect(w.configs.get('n3')!.spec.cidr6).toBe(freedPrefix);
  });

  it('quarantines both prefixes of a node deleted by the garbage collector, and keeps other finalizers', () => {
    const pool = makePool('a', {
      ...baseSpec(),
      ipv4: { cidr: '192.0.2.0/24', nodePrefixLength: 28 },
    });
    const nc = stored(
      desiredNodeConfig(pool, makeNode('gone', { pool: 'a' }), {
        cidr6: '2001:db8:100:3::/64',
        cidr4: '192.0.2.48/28',
      }),
      { deleting: true, finalizers: ['example.com/keep', QUARANTINE_FINALIZER] },
    );
    const plan = planPool(input({ pool, nodeConfigs: [nc] }));
    expect(plan.release).toEqual([
      { name: 'gone', uid: 'uid-nc-gone', resourceVersion: '1', finalizers: ['example.com/keep'] },
    ]);
    expect(plan.status.quarantine?.map((q) => q.prefix)).toEqual([
      '192.0.2.48/28',
      '2001:db8:100:3::/64',
    ]);
    // Still allocated while it exists: nothing else may get its prefixes yet.
    expect(plan.status.ipv6).toMatchObject({ allocated: 1, quarantined: 0 });
  });

  it('keeps an entry it already has (re-recording never extends) and holds unreadable times for a full period', () => {
    const until = iso(T0 + 5 * HOUR);
    const pool = makePool('a', baseSpec(), {
      status: {
        quarantine: [
          { prefix: '2001:db8:100:3::/64', node: 'x', until },
          { prefix: '2001:db8:100:4::/64', until: 'garbage' },
        ],
      },
    });
    const nc = stored(
      desiredNodeConfig(pool, makeNode('x', {}), { cidr6: '2001:db8:100:3::/64' }),
      { deleting: true },
    );
    const plan = planPool(input({ pool, nodeConfigs: [nc] }));
    expect(plan.status.quarantine).toEqual([
      { prefix: '2001:db8:100:3::/64', node: 'x', until: new Date(until).toISOString() },
      { prefix: '2001:db8:100:4::/64', until: new Date(T0 + 25 * HOUR).toISOString() },
    ]);
  });

  it('comes back when the earliest quarantine entry expires', () => {
    const now = T0 + HOUR;
    const pool = makePool('a', baseSpec(), {
      status: { quarantine: [{ prefix: '2001:db8:100:3::/64', until: iso(now + 600_000) }] },
    });
    expect(planPool(input({ pool, now })).requeueAfterMs).toBe(601_000);
    expect(planPool(input({ pool: makePool('a'), now })).requeueAfterMs).toBeUndefined();
  });

  it('leaves the NodeConfig of a vanished node to the garbage collector unless no Node owns it', () => {
    const pool = makePool('a');
    const owned = stored(
      desiredNodeConfig(pool, makeNode('owned', { pool: 'a' }), { cidr6: '2001:db8:100::/64' }),
    );
    const orphan = handWritten('orphan', { pool: 'a', cidr6: '2001:db8:100:1::/64' });
    const plan = planPool(input({ pool, nodeConfigs: [owned, orphan] }));
    expect(plan.delete.map((d) => d.name)).toEqual(['orphan']);
  });

  it('deletes the NodeConfigs of a pool that is gone and releases those already being deleted', () => {
    const a = handWritten('n0', { pool: 'gone', cidr6: '2001:db8::/64' });
    const b = handWritten(
      'n1',
      { pool: 'gone', cidr6: '2001:db8:0:1::/64' },
      { deleting: true, finalizers: [QUARANTINE_FINALIZER] },
    );
    const c = handWritten('n2', { pool: 'other', cidr6: '2001:db8:0:2::/64' });
    const plan = planOrphans('gone', [a, b, c]);
    expect(plan.delete.map((d) => d.name)).toEqual(['n0']);
    expect(plan.release).toEqual([expect.objectContaining({ name: 'n1', finalizers: [] })]);
  });
});
