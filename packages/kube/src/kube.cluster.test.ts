// The runtime against a real kube-apiserver (the twin of the unit tier's FakeApiServer): the
// cache's paged list + watch and its relist after 410, field selectors, streaming lists, server-side apply and
// status writes on flock's CRDs, leader election on a real Lease, and aggregated Events.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { eventually, startControlPlane, type ControlPlane } from '@flock/testkit';
import { NodeConfig, allCrds } from '@flock/api';
import { nodeConfig } from '@flock/api/testing';
import { applyObject } from './api/apply.js';
import { Cache } from './informer/cache.js';
import { createNodeConfigClient, NODECONFIGS } from './flock/clients.js';
import { EventRecorder } from './api/events.js';
import { HttpTransport } from './transport/http-transport.js';
import { LeaderElector } from './control/leader.js';
import { kubeLeaseStore } from './control/lease-store.js';
import { resourceListWatch, type ListWatchSource } from './informer/listwatch-source.js';
import { createMemoryLogger } from '../testing/memory-logger.js';
import { configMap, createServiceAccount, expired, nodePod } from '../testing/cluster-objects.js';
import {
  CONFIGMAPS,
  CUSTOM_RESOURCE_DEFINITIONS,
  EVENTS,
  PODS,
  objectPath,
  resourcePath,
  type KubeObject,
} from './core/resource.js';
import { formatFieldSelector } from './core/selectors.js';
import { PatchStrategy } from './transport/transport.js';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

let cp: ControlPlane;
let api: HttpTransport;
let seq = 0;

async function namespace(): Promise<string> {
  const name = `kube-test-${process.pid}-${++seq}`;
  await api.request({ method: 'POST', path: '/api/v1/namespaces', body: { metadata: { name } } });
  return name;
}

const serviceAccount = (ns: string) => createServiceAccount(api, ns);

beforeAll(async () => {
  // Compact etcd every 2 s and serve configmap watches from etcd (no watch cache), so that an
  // old resourceVersion really is gone and the server answers 410 Expired.
  cp = await startControlPlane({
    extraArgs: { apiserver: ['--etcd-compaction-interval=2s', '--watch-cache-sizes=configmaps#0'] },
  });
  api = new HttpTransport(cp.kubeConfig);
  // flock's CRDs, applied with the runtime's own server-side apply helper.
  for (const [, crd] of allCrds()) {
    await applyObject(api, CUSTOM_RESOURCE_DEFINITIONS, crd as unknown as KubeObject, {
      fieldManager: 'flock-test',
    });
  }
  for (const name of [
    'pools.flock.fritzlab.net',
    'nodeconfigs.flock.fritzlab.net',
    'addressclaims.flock.fritzlab.net',
  ]) {
    await eventually(`CRD ${name} established`, async () => {
      const crd = (await api.request({
        method: 'GET',
        path: objectPath(CUSTOM_RESOURCE_DEFINITIONS, name),
      })) as {
        status?: { conditions?: Array<{ type: string; status: string }> };
      };
      return (
        crd.status?.conditions?.some((c) => c.type === 'Established' && c.status === 'True') ||
        undefined
      );
    });
  }
});
afterAll(async () => cp?.stop());

describe('Cache on a real API server', () => {
  it('lists in pages, then follows changes in order', async () => {
    const ns = await namespace();
    for (let i = 0; i < 5; i++)
      await applyObject(api, CONFIGMAPS, configMap(`c${i}`, ns, '1'), { fieldManager: 't' });
    const log = createMemoryLogger();
    const cache = new Cache<KubeObject & { data: { v: string } }>({
      source: resourceListWatch(api, CONFIGMAPS, { namespace: ns }),
      logger: log,
      pageSize: 2,
    });
    const calls: string[] = [];
    cache.addHandler({
      onAdd: (o) => calls.push(`add ${o.metadata.name}`),
      onUpdate: (a, b) =>
        a.metadata.resourceVersion !== b.metadata.resourceVersion &&
        calls.push(`update ${b.metadata.name}:${b.data.v}`),
      onDelete: (o) => calls.push(`delete ${o.metadata.name}`),
    });
    cache.start();
    try {
      await cache.waitForSync(10_000);
      expect(cache.keys().sort()).toEqual([0, 1, 2, 3, 4].map((i) => `${ns}/c${i}`));
      expect(cache.get(`${ns}/c0`)?.kind).toBe('ConfigMap'); // restored on list items
      await applyObject(api, CONFIGMAPS, configMap('c0', ns, '2'), { fieldManager: 't' });
      await api.request({ method: 'DELETE', path: objectPath(CONFIGMAPS, 'c1', ns) });
      await applyObject(api, CONFIGMAPS, configMap('c5', ns, '1'), { fieldManager: 't' });
      await eventually('three changes', () => (calls.length >= 8 ? true : undefined));
      expect(calls.slice(5)).toEqual(['update c0:2', 'delete c1', 'add c5']);
    } finally {
      await cache.stop();
    }
  });

  it('relists when its watch starts from a resourceVersion the server no longer has', async () => {
    const ns = await namespace();
    await applyObject(api, CONFIGMAPS, configMap('a', ns, '1'), { fieldManager: 't' });
    const real = resourceListWatch(api, CONFIGMAPS, { namespace: ns });
    await eventually('etcd compacted past resourceVersion 1', () => expired(real));
    let lists = 0;
    // The first list pretends to be ancient: the watch from it must get 410 and cause a relist.
    const source: ListWatchSource = {
      description: 'configmaps (aged)',
      list: async (o) => {
        const page = await real.list(o);
        return lists++ === 0 ? { ...page, resourceVersion: '1' } : page;
      },
      watch: (o, onEvent, onDone) => real.watch(o, onEvent, onDone),
    };
    const log = createMemoryLogger();
    const cache = new Cache({
      source,
      logger: log,
      backoff: { baseMs: 50, maxMs: 500 },
    });
    cache.start();
    try {
      await eventually('a relist', () => (lists >= 2 ? true : undefined));
      expect(log.find('info', 'watch expired (410)')).toHaveLength(1);
      await applyObject(api, CONFIGMAPS, configMap('b', ns, '1'), { fieldManager: 't' });
      await eventually('b through the new watch', () => cache.get(`${ns}/b`));
      expect(cache.keys().sort()).toEqual([`${ns}/a`, `${ns}/b`]);
    } finally {
      await cache.stop();
    }
  });

  it('watches only the pods of one node through a field selector', async () => {
    const ns = await namespace();
    await serviceAccount(ns);
    const pod = (name: string, nodeName: string) => nodePod(ns, name, nodeName);
    await applyObject(api, PODS, pod('here', 'node-a'), { fieldManager: 't' });
    await applyObject(api, PODS, pod('there', 'node-b'), { fieldManager: 't' });
    const cache = new Cache({
      source: resourceListWatch(api, PODS),
      fieldSelector: formatFieldSelector({ 'spec.nodeName': 'node-a', 'metadata.namespace': ns }),
      logger: createMemoryLogger(),
    });
    cache.start();
    try {
      await cache.waitForSync(10_000);
      expect(cache.keys()).toEqual([`${ns}/here`]);
      await applyObject(api, PODS, pod('later', 'node-a'), { fieldManager: 't' });
      await applyObject(api, PODS, pod('elsewhere', 'node-b'), { fieldManager: 't' });
      await eventually('the new pod of node-a', () => cache.get(`${ns}/later`));
      await sleep(300);
      expect(cache.keys().sort()).toEqual([`${ns}/here`, `${ns}/later`]);
    } finally {
      await cache.stop();
    }
  });
});

describe('streaming lists (WatchList) on a real API server', () => {
  it('a cache syncs from one watch (no LIST) with its field selector, then follows changes', async () => {
    const ns = await namespace();
    await serviceAccount(ns);
    await applyObject(api, PODS, nodePod(ns, 'here', 'node-a'), { fieldManager: 't' });
    await applyObject(api, PODS, nodePod(ns, 'there', 'node-b'), { fieldManager: 't' });
    const real = resourceListWatch(api, PODS);
    const asked: string[] = [];
    const source: ListWatchSource = {
      description: real.description,
      list: (o) => {
        asked.push('list');
        return real.list(o);
      },
      watch: (o, onEvent, onDone) => {
        asked.push(o.sendInitialEvents ? 'stream' : 'watch');
        return real.watch(o, onEvent, onDone);
      },
    };
    const log = createMemoryLogger();
    const cache = new Cache({
      source,
      fieldSelector: formatFieldSelector({ 'spec.nodeName': 'node-a', 'metadata.namespace': ns }),
      logger: log,
      watchList: true,
    });
    cache.start();
    try {
      await cache.waitForSync(10_000);
      expect(asked).toEqual(['stream']);
      expect(cache.keys()).toEqual([`${ns}/here`]);
      expect(cache.get(`${ns}/here`)?.kind).toBe('Pod');
      expect(log.find('info', 'does not serve streaming lists')).toEqual([]);
      await applyObject(api, PODS, nodePod(ns, 'later', 'node-a'), { fieldManager: 't' });
      // No kubelet confirms a graceful delete: at once.
      await api.request({
        method: 'DELETE',
        path: objectPath(PODS, 'here', ns),
        body: { gracePeriodSeconds: 0 },
      });
      await eventually('the change and the delete', () =>
        cache.keys().join() === `${ns}/later` ? true : undefined,
      );
      expect(asked).toEqual(['stream']);
    } finally {
      await cache.stop();
    }
  });
});

describe('server-side apply and status on flock CRDs', () => {
  it('applies, removes fields the manager dropped, detects conflicts, and writes status apart', async () => {
    const client = createNodeConfigClient(api, {
      fieldManager: 'flock-operator',
      logger: createMemoryLogger(),
    });
    const first = await client.apply(
      nodeConfig({ name: 'n1', spec: { anycastCIDRs: ['2001:db8:300::/120'] } }),
    );
    expect(NodeConfig.safeParse(first).success).toBe(true);
    const second = await client.apply(nodeConfig({ name: 'n1' }));
    expect(second.spec.anycastCIDRs).toBeUndefined();
    const other = createNodeConfigClient(api, {
      fieldManager: 'someone-else',
      logger: createMemoryLogger(),
    });
    await expect(
      other.apply(nodeConfig({ name: 'n1', spec: { pool: 'dc2' } }), { force: false }),
    ).rejects.toMatchObject({ code: 409 });
    const status = { observedGeneration: second.metadata.generation ?? 0, advertisedRoutes: 2 };
    const withStatus = await client.patchStatus('n1', status);
    expect(withStatus.status).toEqual(status);
    expect(withStatus.metadata.generation).toBe(second.metadata.generation);
    const merged = await client.patchStatus('n1', { advertisedRoutes: 3 }, { mode: 'merge' });
    expect(merged.status).toEqual({ ...status, advertisedRoutes: 3 });
    await expect(
      client.patchStatus(
        'n1',
        { advertisedRoutes: 4 },
        { mode: 'merge', resourceVersion: second.metadata.resourceVersion },
      ),
    ).rejects.toMatchObject({ code: 409 });
    const ignored = await client.apply({
      ...nodeConfig({ name: 'n1' }),
      status: { advertisedRoutes: 99 },
    });
    expect(ignored.status?.advertisedRoutes).toBe(3); // the main resource ignores status
    await expect(
      client.apply(nodeConfig({ name: 'bad', spec: { cidr6: 'nonsense' } })),
    ).rejects.toMatchObject({
      code: 422,
    });
    expect(await client.delete('n1', { uid: first.metadata.uid as string })).toBe(true);
    expect(await client.get('n1')).toBeUndefined();
  });

  it('finalizers: DELETE marks, the write removing the last finalizer deletes, none may be added', async () => {
    // The twin of the FakeApiServer test of the same name.
    const ns = await namespace();
    const path = objectPath(CONFIGMAPS, 'fin', ns);
    await api.request({
      method: 'POST',
      path: resourcePath(CONFIGMAPS, { namespace: ns }),
      body: { metadata: { name: 'fin', finalizers: ['flock.test/x', 'flock.test/y'] } },
    });
    type Meta = { metadata: { deletionTimestamp?: string; finalizers?: string[] } };
    const marked = (await api.request({ method: 'DELETE', path })) as Meta;
    expect(marked.metadata.deletionTimestamp).toMatch(/^\d{4}-\d\d-\d\dT.*Z$/);
    const patch = (metadata: Record<string, unknown>) =>
      api.request({
        method: 'PATCH',
        path,
        contentType: PatchStrategy.MergePatch,
        body: { metadata },
      });
    await expect(
      patch({ finalizers: ['flock.test/x', 'flock.test/y', 'flock.test/z'] }),
    ).rejects.toMatchObject({
      code: 422,
    });
    const still = (await patch({ finalizers: ['flock.test/y'], deletionTimestamp: null })) as Meta;
    expect(still.metadata.deletionTimestamp).toBe(marked.metadata.deletionTimestamp);
    await patch({ finalizers: [] });
    await expect(api.request({ method: 'GET', path })).rejects.toMatchObject({ code: 404 });
  });

  it('caches NodeConfigs parsed by their schema', async () => {
    const client = createNodeConfigClient(api, {
      fieldManager: 'flock-operator',
      logger: createMemoryLogger(),
    });
    await client.apply(nodeConfig({ name: 'cached' }));
    const cache = new Cache({
      source: resourceListWatch(api, NODECONFIGS),
      schema: NodeConfig,
      logger: createMemoryLogger(),
    });
    cache.start();
    try {
      await cache.waitForSync(10_000);
      expect(cache.get('cached')?.spec.bgp.asn).toBe(64512);
    } finally {
      await cache.stop();
    }
  });
});

describe('leader election on a real Lease', () => {
  it('one of two electors leads; a stopped leader releases and the other takes over fast', async () => {
    const ns = await namespace();
    const started: string[] = [];
    const elector = (id: string) =>
      new LeaderElector({
        store: kubeLeaseStore(new HttpTransport(cp.kubeConfig), ns, 'flock-operator'),
        identity: id,
        leaseDurationMs: 4000,
        renewDeadlineMs: 3000,
        retryPeriodMs: 500,
        logger: createMemoryLogger(),
        onStartedLeading: () => void started.push(`${id}@${Date.now()}`),
      });
    const a = elector('a');
    const b = elector('b');
    a.start();
    await eventually('a leads', () => (a.isLeader() ? true : undefined));
    b.start();
    await sleep(1500);
    expect(b.isLeader()).toBe(false);
    const lease = (await api.request({
      method: 'GET',
      path: `/apis/coordination.k8s.io/v1/namespaces/${ns}/leases/flock-operator`,
    })) as {
      spec: { holderIdentity: string; renewTime: string; leaseDurationSeconds: number };
    };
    expect(lease.spec).toMatchObject({ holderIdentity: 'a', leaseDurationSeconds: 4 });
    expect(lease.spec.renewTime).toMatch(/\.\d{6}Z$/);
    const stoppedAt = Date.now();
    await a.stop();
    await eventually('b leads', () => (b.isLeader() ? true : undefined), { timeoutMs: 10_000 });
    expect(Date.now() - stoppedAt).toBeLessThan(4000); // did not wait for the lease to expire
    await b.stop();
    expect(started.map((s) => s.split('@')[0])).toEqual(['a', 'b']);
  });
});

describe('Events', () => {
  it('records an events.k8s.io/v1 Event and counts repeats on it', async () => {
    const ns = await namespace();
    const cm = (await applyObject(api, CONFIGMAPS, configMap('subject', ns, '1'), {
      fieldManager: 't',
    })) as KubeObject;
    const recorder = new EventRecorder({
      transport: api,
      reportingController: 'flock.fritzlab.net/test',
      reportingInstance: 'test-0',
      logger: createMemoryLogger(),
    });
    const input = {
      type: 'Warning' as const,
      reason: 'Exhausted',
      action: 'Allocate',
      note: 'no prefix left',
    };
    await recorder.event(cm, input);
    await recorder.event(cm, input);
    await recorder.event(cm, input);
    const list = (await api.request({
      method: 'GET',
      path: resourcePath(EVENTS, { namespace: ns }),
    })) as {
      items: Array<{ reason: string; series?: { count: number }; regarding: { uid: string } }>;
    };
    expect(list.items).toHaveLength(1);
    expect(list.items[0]).toMatchObject({
      reason: 'Exhausted',
      series: { count: 3 },
      regarding: { uid: cm.metadata.uid },
    });
    const core = (await api.request({
      method: 'GET',
      path: `/api/v1/namespaces/${ns}/events`,
    })) as { items: Array<{ count?: number; reason: string }> };
    expect(core.items[0]?.reason).toBe('Exhausted'); // kubectl get events shows it
  });
});
