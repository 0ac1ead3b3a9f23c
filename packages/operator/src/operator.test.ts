// The operator end to end on the in-memory API server (finalizers included): NodeConfigs for selected nodes, the quarantine across a node's
// deletion, read-your-writes while a watch lags, retries, pool deletion, health and metrics,
// and two replicas handing over. The cluster tier repeats the essentials on a real server.
import type { NodeConfig } from '@flock/api';
import { API_VERSION, POOL_KIND, type Pool } from '@flock/api';
import { EVENTS, LEASES, NODECONFIGS, NODES, POOLS, type KubeTransport } from '@flock/kube';
import { createMemoryLogger, FakeApiServer } from '@flock/kube/testing';
import { eventually } from '@flock/testkit';
import { afterEach, describe, expect, it } from 'vitest';
import { QUARANTINE_FINALIZER } from './names.js';
import { startOperator, type Operator, type OperatorOptions } from './operator.js';
import { baseSpec, type PoolSpecInput } from '../testing/fixtures.js';

const FAST = { leaseDurationMs: 1_500, renewDeadlineMs: 1_000, retryPeriodMs: 200 };
const running: Operator[] = [];
afterEach(async () => {
  await Promise.all(running.splice(0).map((o) => o.stop()));
});

async function operator(transport: KubeTransport, o: Partial<OperatorOptions> = {}) {
  const op = await startOperator({
    transport,
    logger: createMemoryLogger(),
    identity: `op-${running.length}`,
    namespace: 'flock-system',
    processMetrics: false,
    ...FAST,
    ...o,
  });
  running.push(op);
  return op;
}

const putPool = (server: FakeApiServer, name: string, spec: PoolSpecInput = baseSpec()) =>
  server.putObject(POOLS, { apiVersion: API_VERSION, kind: POOL_KIND, metadata: { name }, spec });
const putNode = (server: FakeApiServer, name: string, labels: Record<string, string>) =>
  server.putObject(NODES, { apiVersion: 'v1', kind: 'Node', metadata: { name, labels } });
const configs = (server: FakeApiServer) => server.listObjects<NodeConfig>(NODECONFIGS);
const cidrsByNode = (server: FakeApiServer) =>
  Object.fromEntries(configs(server).map((nc) => [nc.metadata.name, nc.spec.cidr6]));
const pool = (server: FakeApiServer, name: string) => server.getObject<Pool>(POOLS, name);

/** The garbage collector's part when a Node goes: delete the NodeConfigs it owns. */
async function deleteNodeLikeGc(server: FakeApiServer, transport: KubeTransport, name: string) {
  server.deleteObject(NODES, name);
  await transport.request({ method: 'DELETE', path: `/apis/${API_VERSION}/nodeconfigs/${name}` });
}

describe('operator on the in-memory API server', () => {
  it('configures selected nodes, quarantines a deleted node, and serves health and metrics', async () => {
    const server = new FakeApiServer();
    const api = server;
    putPool(server, 'a');
    for (const n of ['n0', 'n1', 'n2']) putNode(server, n, { pool: 'a' });
    putNode(server, 'elsewhere', { pool: 'b' });
    const op = await operator(api, { healthPort: 0 });
    await eventually('3 NodeConfigs', () => configs(server).length === 3);
    expect(cidrsByNode(server)).toEqual({
      n0: '2001:db8:100::/64',
      n1: '2001:db8:100:1::/64',
      n2: '2001:db8:100:2::/64',
    });
    const nc = server.getObject<NodeConfig>(NODECONFIGS, 'n0')!;
    expect((nc.metadata as { finalizers?: string[] }).finalizers).toEqual([QUARANTINE_FINALIZER]);
    expect(nc.metadata.ownerReferences).toEqual([
      expect.objectContaining({ kind: 'Node', name: 'n0', blockOwnerDeletion: true }),
    ]);
    await eventually('pool status', () => pool(server, 'a')?.status?.nodes === 3);
    expect(pool(server, 'a')?.status?.ipv6).toEqual({
      total: 16,
      allocated: 3,
      quarantined: 0,
      free: 13,
    });

    await deleteNodeLikeGc(server, api, 'n0');
    await eventually('n0 released', () => !server.getObject(NODECONFIGS, 'n0'));
    expect(pool(server, 'a')?.status?.quarantine).toEqual([
      expect.objectContaining({ prefix: '2001:db8:100::/64', node: 'n0' }),
    ]);
    putNode(server, 'n3', { pool: 'a' });
    await eventually('n3 configured', () => cidrsByNode(server)['n3']);
    expect(cidrsByNode(server)['n3']).toBe('2001:db8:100:3::/64'); // not n0's

    const events = server.listObjects<{ reason: string; note: string }>(EVENTS);
    expect(events.map((e) => e.note)).toContain(
      'NodeConfig for node n3 created in pool a with prefix 2001:db8:100:3::/64',
    );
    const get = (path: string) => fetch(`http://127.0.0.1:${op.healthPort}${path}`);
    expect((await get('/healthz')).status).toBe(200);
    expect(await (await get('/readyz?verbose')).text()).toContain('[+]nodeconfigs-synced ok');
    const metrics = await (await get('/metrics')).text();
    expect(metrics).toContain(
      'flock_operator_pool_prefixes{pool="a",family="ipv6",state="allocated"} 3',
    );
    expect(metrics).toMatch(
      /flock_operator_writes_total\{kind="nodeconfig_apply",result="ok"\} [45]/,
    );
    expect(metrics).toContain(
      'flock_operator_leader_is_leader{lease="flock-system/flock-operator"} 1',
    );

    await op.stop();
    const lease = server.getObject<{ spec: { holderIdentity?: string } }>(
      LEASES,
      'flock-operator',
      'flock-system',
    );
    expect(lease?.spec.holderIdentity ?? '').toBe(''); // released for the next replica
  });

  it('plans on its own writes while the NodeConfig watch lags (no prefix given twice)', async () => {
    const server = new FakeApiServer();
    const api = server;
    putPool(server, 'a');
    putNode(server, 'n0', { pool: 'a' });
    const op = await operator(api);
    await eventually('n0 configured', () => configs(server).length === 1 && op.isLeader());
    server.silenceWatches('/apis/flock.fritzlab.net/v1alpha1/nodeconfigs');
    putNode(server, 'n1', { pool: 'a' });
    await eventually('n1 configured', () => cidrsByNode(server)['n1']);
    // n1 leaves the pool and n2 arrives: n1's NodeConfig (which the cache never saw) still
    // holds its prefix, so n2 must not get it.
    putNode(server, 'n1', { pool: 'none' });
    putNode(server, 'n2', { pool: 'a' });
    await eventually('n2 configured', () => cidrsByNode(server)['n2']);
    const all = configs(server).map((nc) => nc.spec.cidr6);
    expect(new Set(all).size).toBe(all.length);
    expect(
      server.getObject<NodeConfig>(NODECONFIGS, 'n1')?.metadata.deletionTimestamp,
    ).toBeDefined();
  });

  it('retries failed writes with backoff and converges', async () => {
    const server = new FakeApiServer();
    const api = server;
    let failures = 3;
    server.inject((r) =>
      r.method === 'PATCH' && r.path.includes('/nodeconfigs/') && failures-- > 0
        ? new Error('boom')
        : undefined,
    );
    putPool(server, 'a');
    putNode(server, 'n0', { pool: 'a' });
    putNode(server, 'n1', { pool: 'a' });
    const op = await operator(api);
    await eventually('2 NodeConfigs', () => configs(server).length === 2);
    const metrics = await op.registry.getSingleMetricAsString('flock_operator_writes_total');
    expect(metrics).toMatch(/kind="nodeconfig_apply",result="error"\} 3/);
  });

  it('a pool deleted while it is reconciled: no failed write, no retry, its NodeConfigs go', async () => {
    const server = new FakeApiServer();
    let raced = false;
    // The race: the Pool goes between the operator's view and its status write (a 404).
    server.inject((r) => {
      if (!raced && r.method === 'PATCH' && r.path.endsWith('/pools/a/status')) {
        raced = true;
        server.deleteObject(POOLS, 'a');
      }
      return undefined;
    });
    putPool(server, 'a');
    putNode(server, 'n0', { pool: 'a' });
    const logger = createMemoryLogger();
    const op = await operator(server, { logger });
    await eventually('the status write raced', () => raced);
    await eventually('its NodeConfig gone', () => configs(server).length === 0);
    expect(logger.find('error', 'reconcile failed')).toEqual([]);
    expect(logger.find('debug', 'pool deleted while it was reconciled')).toHaveLength(1);
    const metrics = await op.registry.getSingleMetricAsString('flock_operator_writes_total');
    expect(metrics).not.toMatch(/kind="pool_status",result="error"/);
  });

  it('deletes the NodeConfigs of a deleted pool, and gives the nodes to the pool that also selects them', async () => {
    const server = new FakeApiServer();
    const api = server;
    putPool(server, 'a');
    putNode(server, 'n0', { pool: 'a', zone: 'z' });
    await operator(api);
    await eventually('n0 in a', () => configs(server)[0]?.spec.pool === 'a');
    putPool(server, 'z', {
      ...baseSpec(),
      nodeSelector: { matchLabels: { zone: 'z' } },
      ipv6: { cidr: '2001:db8:200::/60', nodePrefixLength: 64 },
    });
    await eventually('conflict reported', () =>
      pool(server, 'z')?.status?.conditions?.find(
        (c) => c.type === 'NodeConflict' && c.status === 'True',
      ),
    );
    expect(configs(server)[0]?.spec.pool).toBe('a'); // a node is not moved while its pool selects it
    server.deleteObject(POOLS, 'a');
    await eventually('n0 in z', () => configs(server)[0]?.spec.pool === 'z');
    expect(configs(server)[0]?.spec.cidr6).toBe('2001:db8:200::/64');
  });

  it('two replicas: one leads; when it is cut off, the other takes over and carries on', async () => {
    const server = new FakeApiServer();
    const clients = [server.connect(), server.connect()];
    putPool(server, 'a');
    putNode(server, 'n0', { pool: 'a' });
    const ops = [
      await operator(clients[0]!, { identity: 'first' }),
      await operator(clients[1]!, { identity: 'second' }),
    ];
    await eventually('a leader', () => ops.filter((o) => o.isLeader()).length === 1);
    const leader = ops.findIndex((o) => o.isLeader());
    await eventually('n0 configured', () => configs(server).length === 1);
    clients[leader]!.partition();
    await eventually(
      'the other leads',
      () => ops[1 - leader]!.isLeader() && !ops[leader]!.isLeader(),
      {
        timeoutMs: 10_000,
      },
    );
    putNode(server, 'n1', { pool: 'a' });
    await eventually('n1 configured', () => configs(server).length === 2);
    expect(cidrsByNode(server)).toEqual({ n0: '2001:db8:100::/64', n1: '2001:db8:100:1::/64' });
    clients[leader]!.heal();
  });
});
