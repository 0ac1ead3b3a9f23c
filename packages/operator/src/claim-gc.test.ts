// The claim GC on the in-memory API server: which claims it releases (pinned: pod gone,
// replaced, finished; anycast: nodes gone; either: no holder past the grace; Service: listed
// Services gone or not showing the address, quarantines that ended), which it keeps,
// that a concurrent change wins over its write, and that the leading operator runs it.
import { claimName, Service, type AddressClaim } from '@flock/api';
import {
  claimObject,
  releasedServiceClaimSpec,
  validAnycastClaimSpec,
  validPinnedClaimSpec,
  validServiceClaimSpec,
} from '@flock/api/testing';
import {
  ADDRESSCLAIMS,
  Cache,
  NODES,
  PODS,
  resourceListWatch,
  SERVICES,
  type KubeObject,
} from '@flock/kube';
import { createMemoryLogger, FakeApiServer } from '@flock/kube/testing';
import { eventually } from '@flock/testkit';
import { Registry } from 'prom-client';
import { afterEach, describe, expect, it } from 'vitest';
import { ClaimGc } from './claim-gc.js';
import { Limiter } from './limiter.js';
import { OperatorMetrics } from './metrics.js';
import { NodeSchema } from './nodes.js';
import { startOperator, type Operator } from './operator.js';
import { serviceObject } from '../testing/services.js';

const stops: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const stop of stops.splice(0).reverse()) await stop();
});

const putNode = (server: FakeApiServer, name: string) =>
  server.putObject(NODES, { apiVersion: 'v1', kind: 'Node', metadata: { name } });

/** A pod as the API server holds it; returns its uid. */
function putPod(server: FakeApiServer, name: string, phase = 'Running', namespace = 'default') {
  return server.putObject(PODS, {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name, namespace },
    spec: { nodeName: 'node-a', containers: [{ name: 'c', image: 'i' }] },
    status: { phase },
  }).metadata.uid;
}

/** A pinned claim of 2001:db8:200::<n> held by `pod` (uid). */
function putPinned(server: FakeApiServer, n: number, pod?: { name: string; uid: string }) {
  const spec = {
    ...validPinnedClaimSpec(),
    address: `2001:db8:200::${n}`,
    holders: pod ? [{ node: 'node-a', pod: pod.name, uid: pod.uid }] : [],
  };
  return server.putObject(ADDRESSCLAIMS, claimObject(spec));
}

const claim = (server: FakeApiServer, address: string) =>
  server.getObject<AddressClaim>(ADDRESSCLAIMS, claimName(address));

async function gcOn(server: FakeApiServer, o: { now?: () => number } = {}) {
  const logger = createMemoryLogger();
  const claims = new Cache<KubeObject>({
    source: resourceListWatch(server, ADDRESSCLAIMS),
    logger,
  });
  const nodes = new Cache({ source: resourceListWatch(server, NODES), schema: NodeSchema, logger });
  const services = new Cache({
    source: resourceListWatch(server, SERVICES),
    schema: Service,
    logger,
  });
  for (const c of [claims, nodes, services]) {
    c.start();
    stops.push(() => c.stop());
  }
  await Promise.all([claims.synced, nodes.synced, services.synced]);
  const registry = new Registry();
  const gc = new ClaimGc({
    transport: server,
    claims,
    nodes,
    services,
    serviceQuarantineMs: 300_000,
    limiter: new Limiter(4),
    logger,
    metrics: new OperatorMetrics(registry, { processMetrics: false }),
    graceMs: 60_000,
    ...o,
  });
  const metric = async (name: string) =>
    (await registry.getSingleMetric(`flock_operator_${name}`)!.get()).values;
  return { gc, metric, logger };
}

describe('claim GC', () => {
  it('releases a pinned claim whose pod is gone, replaced or finished, and keeps a live one', async () => {
    const server = new FakeApiServer();
    putNode(server, 'node-a');
    const live = { name: 'live', uid: putPod(server, 'live') };
    const done = { name: 'done', uid: putPod(server, 'done', 'Succeeded') };
    const failed = { name: 'failed', uid: putPod(server, 'failed', 'Failed') };
    putPod(server, 'again');
    putPinned(server, 1, live);
    putPinned(server, 2, { name: 'gone', uid: 'uid-gone' });
    putPinned(server, 3, { name: 'again', uid: 'uid-of-the-pod-before' });
    putPinned(server, 4, done);
    putPinned(server, 5, failed);
    const { gc, metric } = await gcOn(server);
    await gc.sweep();
    expect(server.listObjects<AddressClaim>(ADDRESSCLAIMS).map((c) => c.spec.address)).toEqual([
      '2001:db8:200::1',
    ]);
    expect(await metric('claim_gc_deletions_total')).toEqual(
      expect.arrayContaining([
        { labels: { kind: 'Pinned', reason: 'pod-gone' }, value: 1 },
        { labels: { kind: 'Pinned', reason: 'pod-replaced' }, value: 1 },
        { labels: { kind: 'Pinned', reason: 'pod-finished' }, value: 2 },
      ]),
    );
    expect(await metric('claims')).toEqual(
      expect.arrayContaining([
        { labels: { kind: 'Pinned' }, value: 5 },
        { labels: { kind: 'Anycast' }, value: 0 },
      ]),
    );
    // Every delete was conditional on what was read.
    const deletes = server.requests.filter((r) => r.method === 'DELETE');
    expect(deletes).toHaveLength(4);
    for (const d of deletes)
      expect(d.body).toMatchObject({
        preconditions: { uid: expect.any(String), resourceVersion: expect.any(String) },
      });
  });

  it('deletes a claim without a holder only once the grace has passed', async () => {
    const server = new FakeApiServer();
    putPinned(server, 7);
    let now = 1_000_000;
    const { gc } = await gcOn(server, { now: () => now });
    await gc.sweep();
    now += 59_000;
    await gc.sweep();
    expect(claim(server, '2001:db8:200::7')).toBeDefined();
    now += 1_000;
    await gc.sweep();
    expect(claim(server, '2001:db8:200::7')).toBeUndefined();
  });

  it('removes the anycast holders whose node is gone, and the claim with the last of them', async () => {
    const server = new FakeApiServer();
    putNode(server, 'node-a');
    // node-a, node-b; and a field of a newer CRD, which the update keeps.
    server.putObject(ADDRESSCLAIMS, claimObject({ ...validAnycastClaimSpec(), later: 'kept' }));
    const lonely = { ...validAnycastClaimSpec(), address: '203.0.113.54' };
    server.putObject(ADDRESSCLAIMS, claimObject({ ...lonely, holders: [{ node: 'node-b' }] }));
    const { gc, metric } = await gcOn(server);
    await gc.sweep();
    expect(claim(server, validAnycastClaimSpec().address)?.spec).toMatchObject({
      holders: [{ node: 'node-a' }],
      later: 'kept',
    });
    expect(claim(server, '203.0.113.54')).toBeUndefined();
    expect((await metric('claim_gc_holders_removed_total'))[0]?.value).toBe(1);
    expect(await metric('claim_gc_deletions_total')).toEqual([
      { labels: { kind: 'Anycast', reason: 'nodes-gone' }, value: 1 },
    ]);
  });

  it('asks for a node its cache does not know yet before calling it gone', async () => {
    const server = new FakeApiServer();
    server.putObject(ADDRESSCLAIMS, claimObject(validAnycastClaimSpec()));
    const { gc } = await gcOn(server);
    // Both nodes join after the cache listed, and its watch has not told it yet.
    server.silenceWatches('/api/v1/nodes');
    putNode(server, 'node-a');
    putNode(server, 'node-b');
    await gc.sweep();
    const asked = server.requests.filter(
      (r) => r.method === 'GET' && r.path.startsWith('/api/v1/nodes/'),
    );
    expect(asked.map((r) => r.path)).toEqual(['/api/v1/nodes/node-a', '/api/v1/nodes/node-b']);
    expect(claim(server, validAnycastClaimSpec().address)?.spec.holders).toHaveLength(2);
  });

  it('drops Services that are gone or do not show the address (status or external IPs), and ends quarantines', async () => {
    const server = new FakeApiServer();
    const showing = (name: string, ip: string) =>
      server.putObject(SERVICES, {
        ...serviceObject(name, { namespace: 'default' }),
        status: { loadBalancer: { ingress: [{ ip, ipMode: 'VIP' }] } },
      });
    // web-http shows the address, web-dns is gone: the claim keeps web-http.
    showing('web-http', '2001:db8:400::1');
    server.putObject(ADDRESSCLAIMS, claimObject(validServiceClaimSpec()));
    // api shows another address: dropped once the grace has passed; the last out releases.
    showing('api', '2001:db8:400::9');
    const api = { ...validServiceClaimSpec(), address: '2001:db8:400::2', services: ['api'] };
    server.putObject(ADDRESSCLAIMS, claimObject(api));
    // ext names the address among its external IPs (no status): kept.
    const ext = serviceObject('ext', { namespace: 'default', type: 'ClusterIP' });
    server.putObject(SERVICES, { ...ext, spec: { ...ext.spec, externalIPs: ['2001:db8:400::4'] } });
    const external = { ...validServiceClaimSpec(), address: '2001:db8:400::4', services: ['ext'] };
    server.putObject(ADDRESSCLAIMS, claimObject(external));
    // A quarantine that started at 2030-01-01T00:00:00Z.
    const quarantined = { ...releasedServiceClaimSpec(), address: '2001:db8:400::3' };
    server.putObject(ADDRESSCLAIMS, claimObject(quarantined));
    let now = Date.parse('2030-01-01T00:04:00Z');
    const { gc, metric } = await gcOn(server, { now: () => now });
    await gc.sweep();
    expect(claim(server, '2001:db8:400::1')?.spec.services).toEqual(['web-http']);
    expect(claim(server, '2001:db8:400::2')?.spec.services).toEqual(['api']);
    expect(claim(server, '2001:db8:400::3')).toBeDefined();
    now += 60_000; // the grace (1 min) and the quarantine (5 min) have passed
    await gc.sweep();
    expect(claim(server, '2001:db8:400::2')?.spec).toMatchObject({
      services: [],
      releasedAt: new Date(now).toISOString(),
    });
    expect(claim(server, '2001:db8:400::3')).toBeUndefined();
    expect(claim(server, '2001:db8:400::4')?.spec.services).toEqual(['ext']);
    expect(claim(server, '2001:db8:400::1')?.spec.holders).toEqual([]); // no holder is no reason
    expect((await metric('claim_gc_services_removed_total'))[0]?.value).toBe(2);
    expect(await metric('claim_gc_deletions_total')).toEqual([
      { labels: { kind: 'Service', reason: 'quarantine-over' }, value: 1 },
    ]);
  });

  it('loses to a concurrent change: a claim handed over meanwhile stays', async () => {
    const server = new FakeApiServer();
    putNode(server, 'node-b');
    const stored = putPinned(server, 8, { name: 'old', uid: 'uid-old' });
    const next = { name: 'new', uid: putPod(server, 'new') };
    const { gc, metric } = await gcOn(server);
    // The agent of the new pod takes the claim over between the GC's read and its delete.
    server.inject((r) => {
      if (r.method === 'DELETE' && r.path.includes('addressclaims'))
        server.putObject(ADDRESSCLAIMS, {
          ...stored,
          spec: { ...stored.spec, holders: [{ node: 'node-b', pod: next.name, uid: next.uid }] },
        });
      return undefined;
    });
    await gc.sweep();
    expect(claim(server, '2001:db8:200::8')?.spec.holders[0]?.pod).toBe('new');
    expect(await metric('writes_total')).toContainEqual({
      labels: { kind: 'claim_delete', result: 'conflict' },
      value: 1,
    });
  });

  it('runs in the leading operator, at start', async () => {
    const server = new FakeApiServer();
    putPinned(server, 9, { name: 'gone', uid: 'uid-gone' });
    const op: Operator = await startOperator({
      transport: server,
      logger: createMemoryLogger(),
      identity: 'op-claims',
      leaderElect: false,
      processMetrics: false,
    });
    stops.push(() => op.stop());
    await eventually('the claim released', () => !claim(server, '2001:db8:200::9'));
    const text = await op.registry.metrics();
    expect(text).toContain(
      'flock_operator_claim_gc_deletions_total{kind="Pinned",reason="pod-gone"} 1',
    );
    expect(text).toContain('flock_operator_loop_runs_total{loop="claim-gc",result="ok"}');
  });
});
