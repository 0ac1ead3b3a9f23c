// The operator (in-process) on a real API server with the real controller-manager: nodes get
// their NodeConfigs, follow label changes, are garbage-collected with their Node; exhaustion,
// overlapping pools and node conflicts become conditions and Events; the CRD refuses what is
// invalid. Each test uses its own pool, range and node labels.
import { IP_ALGO_ANNOTATION, PoolConditions } from '@flock/api';
import { createMemoryLogger, type MemoryLogger } from '@flock/kube/testing';
import { eventually } from '@flock/testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { QUARANTINE_FINALIZER } from './names.js';
import { startOperator, type Operator } from './operator.js';
import {
  applyPool,
  condition,
  configsOf,
  createNode,
  deleteNode,
  getPool,
  labelNode,
  listEvents,
  NAMESPACE,
  startCluster,
  type Cluster,
} from '../testing/cluster.js';
import { baseSpec, type PoolSpecInput } from '../testing/fixtures.js';

let c: Cluster;
let op: Operator;
let log: MemoryLogger;
const LONG = { timeoutMs: 60_000 };

beforeAll(async () => {
  c = await startCluster(['etcd', 'apiserver', 'controller-manager']);
  log = createMemoryLogger();
  op = await startOperator({
    transport: c.api,
    logger: log,
    identity: 'op-test',
    namespace: NAMESPACE,
  });
});
afterAll(async () => {
  await op?.stop();
  await c?.cp.stop();
});

const spec = (label: string, cidr: string, extra: Partial<PoolSpecInput> = {}): PoolSpecInput => ({
  ...baseSpec(),
  nodeSelector: { matchLabels: { test: label } },
  ipv6: { cidr, nodePrefixLength: 64 },
  ...extra,
});

const waitForConfigs = (pool: string, n: number) =>
  eventually(
    `${n} NodeConfigs of ${pool}`,
    async () => {
      const m = await configsOf(c.api, pool);
      return m.size === n ? m : undefined;
    },
    LONG,
  );

describe('operator on a real cluster', () => {
  it("gives a Pool's 5 nodes their NodeConfigs: prefixes, peers, owner, finalizer, ip-algo; and a status", async () => {
    await applyPool(
      c,
      'five',
      spec('five', '2001:db8:1::/60', {
        ipv4: { cidr: '10.1.0.0/24', nodePrefixLength: 28 },
        anycast: { cidrs: ['2001:db8:ff::/120'] },
        ipAlgo: 'stable',
      }),
    );
    for (let i = 0; i < 5; i++) {
      await createNode(c.api, `five-${i}`, { test: 'five', ...(i === 0 ? { rack: 'r1' } : {}) });
    }
    const ncs = await waitForConfigs('five', 5);
    for (let i = 0; i < 5; i++) {
      const nc = ncs.get(`five-${i}`)!;
      expect(nc.spec.cidr6).toBe(i === 0 ? '2001:db8:1::/64' : `2001:db8:1:${i}::/64`);
      expect(nc.spec.cidr4).toBe(`10.1.0.${i * 16}/28`);
      expect(nc.spec.anycastCIDRs).toEqual(['2001:db8:ff::/120']);
      expect(nc.spec.bgp.peers.map((p) => p.address)).toEqual(
        i === 0 ? ['2001:db8:ffff::1', '2001:db8:ffff::2'] : ['2001:db8:ffff::1'],
      );
      expect(nc.metadata.annotations?.[IP_ALGO_ANNOTATION]).toBe('stable');
      expect((nc.metadata as { finalizers?: string[] }).finalizers).toEqual([QUARANTINE_FINALIZER]);
      expect(nc.metadata.ownerReferences).toEqual([
        expect.objectContaining({
          apiVersion: 'v1',
          kind: 'Node',
          name: `five-${i}`,
          blockOwnerDeletion: true,
        }),
      ]);
    }
    const pool = await eventually('status', async () => {
      const p = await getPool(c.api, 'five');
      return p?.status?.nodes === 5 && condition(p, 'Ready')?.status === 'True' ? p : undefined;
    });
    expect(pool.status).toMatchObject({
      observedGeneration: 1,
      ipv6: { total: 16, allocated: 5, quarantined: 0, free: 11 },
      ipv4: { total: 16, allocated: 5, quarantined: 0, free: 11 },
    });
    expect(await c.kubectl('get', 'nodeconfigs', 'five-1')).toMatch(
      /five-1\s+five\s+2001:db8:1:1::\/64\s+10\.1\.0\.16\/28/,
    );
    expect(await c.kubectl('get', 'pools', 'five')).toMatch(
      /five\s+2001:db8:1::\/60\s+10\.1\.0\.0\/24\s+64512\s+5\s+5\s+11\s+True/,
    );
  });

  it('follows label changes: a node that leaves loses its NodeConfig (prefix quarantined), one that comes back gets a new prefix', async () => {
    await applyPool(c, 'move', spec('move', '2001:db8:2::/60'));
    await createNode(c.api, 'move-0', { test: 'move' });
    await createNode(c.api, 'move-1', { test: 'move' });
    const before = await waitForConfigs('move', 2);
    const old = before.get('move-0')!.spec.cidr6;
    await labelNode(c.api, 'move-0', { test: 'elsewhere' });
    await waitForConfigs('move', 1);
    const pool = await eventually('quarantined', async () => {
      const p = await getPool(c.api, 'move');
      return p?.status?.quarantine?.length ? p : undefined;
    });
    expect(pool.status?.quarantine).toEqual([
      expect.objectContaining({ prefix: old, node: 'move-0' }),
    ]);
    await labelNode(c.api, 'move-0', { test: 'move' });
    const after = await waitForConfigs('move', 2);
    expect(after.get('move-0')!.spec.cidr6).toBe('2001:db8:2:2::/64');
    expect(after.get('move-1')!.spec.cidr6).toBe(before.get('move-1')!.spec.cidr6);
  });

  it("hands the Pool's local preference and communities to its NodeConfigs, and takes them back", async () => {
    const routes = {
      localPreference: 300,
      communities: { aggregates: { standard: ['64512:100'] }, anycast: { large: ['64512:3:3'] } },
      allowedPodCommunities: { standard: ['64512:666'] },
    };
    const bgp = baseSpec().bgp;
    await applyPool(c, 'routes', spec('routes', '2001:db8:a::/60', { bgp: { ...bgp, ...routes } }));
    await createNode(c.api, 'routes-0', { test: 'routes' });
    const [nc] = (await waitForConfigs('routes', 1)).values();
    expect(nc!.spec.bgp).toMatchObject(routes);
    await applyPool(c, 'routes', spec('routes', '2001:db8:a::/60', { bgp }));
    await eventually(
      'the settings gone',
      async () => {
        const now = (await configsOf(c.api, 'routes')).get('routes-0')?.spec.bgp;
        return now && !('communities' in now) && now.localPreference === undefined;
      },
      LONG,
    );
  });

  it("a deleted Node's NodeConfig is garbage-collected by the controller-manager and its prefix quarantined", async () => {
    await applyPool(c, 'gc', spec('gc', '2001:db8:3::/60'));
    await createNode(c.api, 'gc-0', { test: 'gc' });
    await createNode(c.api, 'gc-1', { test: 'gc' });
    const ncs = await waitForConfigs('gc', 2);
    const freed = ncs.get('gc-0')!.spec.cidr6;
    await deleteNode(c.api, 'gc-0');
    await eventually('collected', async () => !(await configsOf(c.api, 'gc')).has('gc-0'), {
      timeoutMs: 120_000,
    });
    // The operator left it to the garbage collector (its Node owns it).
    expect(
      log.find('info', 'deleting NodeConfig').filter((e) => e.meta['nodeConfig'] === 'gc-0'),
    ).toEqual([]);
    // The quarantine is recorded before the NodeConfig is released (status first), so the
    // counts catch up one status write later.
    const pool = await eventually('quarantined and counted', async () => {
      const p = await getPool(c.api, 'gc');
      const listed = p?.status?.quarantine?.some((q) => q.prefix === freed);
      return listed && p?.status?.ipv6?.allocated === 1 ? p : undefined;
    });
    expect(pool.status?.ipv6).toMatchObject({ allocated: 1, quarantined: 1 });
    await createNode(c.api, 'gc-2', { test: 'gc' });
    const after = await waitForConfigs('gc', 2);
    expect(after.get('gc-2')!.spec.cidr6).not.toBe(freed);
  });

  it('an exhausted pool gets a condition and an Event, and keeps the nodes it could configure', async () => {
    await applyPool(c, 'tiny', spec('tiny', '2001:db8:4::/63'));
    for (let i = 0; i < 3; i++) await createNode(c.api, `tiny-${i}`, { test: 'tiny' });
    await waitForConfigs('tiny', 2);
    const pool = await eventually('exhausted', async () => {
      const p = await getPool(c.api, 'tiny');
      return condition(p, PoolConditions.Exhausted)?.status === 'True' ? p : undefined;
    });
    expect(condition(pool, PoolConditions.Exhausted)?.message).toContain(
      'no free /64 left in IPv6 range 2001:db8:4::/63',
    );
    expect(condition(pool, 'Ready')).toMatchObject({ status: 'False', reason: 'Exhausted' });
    const event = await eventually('event', async () =>
      (await listEvents(c.api)).find(
        (e) => e.regarding.name === 'tiny' && e.reason === 'Exhausted',
      ),
    );
    expect(event.type).toBe('Warning');
    expect((await configsOf(c.api, 'tiny')).has('tiny-2')).toBe(false);
  });

  it('refuses the newer of two overlapping pools with a condition; the older keeps working', async () => {
    await applyPool(c, 'ov-a', spec('ov-a', '2001:db8:5::/60'));
    await applyPool(c, 'ov-b', spec('ov-b', '2001:db8:5::/56'));
    await createNode(c.api, 'ov-a-0', { test: 'ov-a' });
    await createNode(c.api, 'ov-b-0', { test: 'ov-b' });
    await waitForConfigs('ov-a', 1);
    const b = await eventually('ov-b refused', async () => {
      const p = await getPool(c.api, 'ov-b');
      return condition(p, PoolConditions.Overlap)?.status === 'True' ? p : undefined;
    });
    expect(condition(b, 'Ready')).toMatchObject({ status: 'False', reason: 'Overlap' });
    expect(condition(b, PoolConditions.Overlap)?.message).toContain(
      '2001:db8:5::/56 overlaps 2001:db8:5::/60 (pool ov-a)',
    );
    expect(condition(await getPool(c.api, 'ov-a'), PoolConditions.Overlap)?.reason).toBe(
      'NewerPoolRefused',
    );
    expect((await configsOf(c.api, 'ov-b')).size).toBe(0);
    await eventually('Overlap event', async () =>
      (await listEvents(c.api)).find((e) => e.regarding.name === 'ov-b' && e.reason === 'Overlap'),
    );
    await applyPool(c, 'ov-b', spec('ov-b', '2001:db8:6::/60'));
    const fixed = await waitForConfigs('ov-b', 1);
    expect(fixed.get('ov-b-0')!.spec.cidr6).toBe('2001:db8:6::/64');
  });

  it("copies grants, and withdraws a newer pool's floating list that overlaps an older pool's until it is fixed", async () => {
    const grant = { namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': 'web' } } };
    const floating = (cidr: string) => ({ pinned: { cidrs: [cidr], grants: [grant] } });
    await applyPool(c, 'fl-a', spec('fl-a', '2001:db8:b::/60', floating('2001:db8:f0::/120')));
    await applyPool(c, 'fl-b', spec('fl-b', '2001:db8:c::/60', floating('2001:db8:f1::/120')));
    await createNode(c.api, 'fl-b-0', { test: 'fl-b' });
    const [nc] = (await waitForConfigs('fl-b', 1)).values();
    expect(nc!.spec).toMatchObject({ pinnedCIDRs: ['2001:db8:f1::/120'], pinnedGrants: [grant] });
    // fl-b's range now overlaps fl-a's: fl-b keeps its node, without its pinned list.
    await applyPool(c, 'fl-b', spec('fl-b', '2001:db8:c::/60', floating('2001:db8:f0::/124')));
    const withdrawn = await eventually(
      'the pinned list withdrawn',
      async () => {
        const now = (await configsOf(c.api, 'fl-b')).get('fl-b-0')?.spec;
        return now && !('pinnedCIDRs' in now) && !('pinnedGrants' in now) ? now : undefined;
      },
      LONG,
    );
    expect(withdrawn.cidr6).toBe(nc!.spec.cidr6);
    // The status follows the NodeConfig writes.
    const b = await eventually('fl-b reports it', async () => {
      const p = await getPool(c.api, 'fl-b');
      return condition(p, PoolConditions.Overlap)?.status === 'True' ? p : undefined;
    });
    expect(condition(b, PoolConditions.Overlap)).toMatchObject({
      reason: 'FloatingRangesWithdrawn',
      message: expect.stringContaining(
        'pinned range 2001:db8:f0::/124 of pool fl-b overlaps pinned range 2001:db8:f0::/120 of pool fl-a',
      ),
    });
    await applyPool(c, 'fl-b', spec('fl-b', '2001:db8:c::/60', floating('2001:db8:f2::/120')));
    await eventually(
      'the pinned list back',
      async () =>
        (await configsOf(c.api, 'fl-b')).get('fl-b-0')?.spec.pinnedCIDRs?.[0] ===
        '2001:db8:f2::/120',
      LONG,
    );
  });

  it('reports a node that two pools select and keeps it in the first', async () => {
    await applyPool(c, 'cf-a', spec('cf', '2001:db8:7::/60'));
    await applyPool(c, 'cf-b', {
      ...spec('x', '2001:db8:8::/60'),
      nodeSelector: { matchLabels: { 'cf-zone': 'z' } },
    });
    await createNode(c.api, 'cf-0', { test: 'cf', 'cf-zone': 'z' });
    const ncs = await waitForConfigs('cf-a', 1);
    expect(ncs.get('cf-0')!.spec.cidr6).toBe('2001:db8:7::/64');
    for (const name of ['cf-a', 'cf-b']) {
      const p = await eventually(`${name} conflict`, async () => {
        const pool = await getPool(c.api, name);
        return condition(pool, PoolConditions.NodeConflict)?.status === 'True' ? pool : undefined;
      });
      expect(condition(p, PoolConditions.NodeConflict)?.message).toContain(
        'cf-0 (pools cf-a, cf-b; stays in cf-a)',
      );
    }
    await eventually('NodeConflict event', async () =>
      (await listEvents(c.api)).find(
        (e) => e.regarding.name === 'cf-b' && e.reason === 'NodeConflict',
      ),
    );
    expect((await configsOf(c.api, 'cf-b')).size).toBe(0);
  });

  it('the CRD refuses invalid input; what CEL cannot see becomes a condition (above)', async () => {
    await expect(applyPool(c, 'bad', spec('bad', '2001:db8:9::1/60'))).rejects.toThrow(
      /host bits set/,
    );
    await expect(
      applyPool(
        c,
        'bad',
        spec('bad', '2001:db8:9::/60', { ipv6: { cidr: '2001:db8:9::/60', nodePrefixLength: 56 } }),
      ),
    ).rejects.toThrow(/nodePrefixLength must be longer than the pool's prefix length/);
    await expect(
      c.kubectl(
        'patch',
        'nodeconfig',
        'five-1',
        '--type=merge',
        '-p',
        JSON.stringify({ spec: { cidr6: '2001:db8:1:9::/64' } }),
      ),
    ).rejects.toThrow(/cidr6 is immutable/);
  });

  it('settles: no errors logged, and nothing is written while nothing changes', async () => {
    expect(log.entries.filter((e) => e.level === 'error')).toEqual([]);
    const writes = () => op.registry.getSingleMetricAsString('flock_operator_writes_total');
    const before = await eventually('quiet', async () => {
      const a = await writes();
      await new Promise((r) => setTimeout(r, 1_000));
      return a === (await writes()) ? a : undefined;
    });
    await new Promise((r) => setTimeout(r, 3_000));
    expect(await writes()).toBe(before);
  });
});
