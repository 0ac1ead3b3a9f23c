import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import type { Pod } from '@flock/api';
import { pod as buildPod } from '@flock/api/testing';
import { z } from 'zod';
import { Cache, CacheStoppedError, type CacheOptions } from './cache.js';
import { FakeApiServer } from '../../testing/fake-apiserver.js';
import { resourceListWatch } from './listwatch-source.js';
import { createMemoryLogger } from '../../testing/memory-logger.js';
import { CONFIGMAPS, PODS, resourcePath, type KubeObject } from '../core/resource.js';

const cm = (name: string, data: Record<string, string> = {}, namespace = 'ns') => ({
  apiVersion: 'v1',
  kind: 'ConfigMap',
  metadata: { name, namespace },
  data,
});

const pod = (name: string, nodeName: string, labels: Record<string, string> = {}) =>
  buildPod({ name, namespace: 'ns', nodeName, labels });

const tick = (ms = 0) => vi.advanceTimersByTimeAsync(ms);

let server: FakeApiServer;
let log: ReturnType<typeof createMemoryLogger>;
const caches: Cache<KubeObject>[] = [];

function start<T extends KubeObject>(options: Partial<CacheOptions<T>> = {}): Cache<T> {
  const cache = new Cache<T>({
    source: resourceListWatch(server, CONFIGMAPS),
    logger: log,
    watchdogMs: 1000,
    backoff: { baseMs: 100, maxMs: 1000, jitter: 0.5 },
    random: () => 0.5,
    ...options,
  });
  caches.push(cache as unknown as Cache<KubeObject>);
  cache.start();
  return cache;
}

/** Handler calls as strings, e.g. "add a", "update a 1->2", "delete a". */
function record<T extends KubeObject>(cache: Cache<T>, show = (o: T) => o.metadata.name ?? '') {
  const calls: string[] = [];
  cache.addHandler({
    onAdd: (o) => calls.push(`add ${show(o)}`),
    onUpdate: (a, b) => calls.push(`update ${show(a)}->${show(b)}`),
    onDelete: (o) => calls.push(`delete ${show(o)}`),
  });
  return calls;
}

beforeEach(() => {
  vi.useFakeTimers();
  server = new FakeApiServer();
  log = createMemoryLogger();
});
afterEach(async () => {
  for (const c of caches.splice(0)) await c.stop();
  vi.useRealTimers();
});

describe('Cache: list then watch', () => {
  it('lists in pages and watches from the first page resourceVersion', async () => {
    for (let i = 0; i < 7; i++) server.putObject(CONFIGMAPS, cm(`c${i}`));
    const listRv = server.resourceVersion;
    const cache = start({ pageSize: 3 });
    await tick();
    await cache.synced;
    expect(cache.hasSynced).toBe(true);
    expect(cache.keys().sort()).toEqual([
      'ns/c0',
      'ns/c1',
      'ns/c2',
      'ns/c3',
      'ns/c4',
      'ns/c5',
      'ns/c6',
    ]);
    const lists = server.requests.filter((r) => r.method === 'GET');
    expect(lists.map((r) => r.query['limit'])).toEqual([3, 3, 3]);
    expect(lists[0]?.query['continue']).toBeUndefined();
    expect(lists[1]?.query['continue']).toEqual(expect.any(String));
    const watch = server.watchLog[0];
    expect(watch?.query).toMatchObject({ resourceVersion: listRv, allowWatchBookmarks: true });
  });

  it('parses each page as it comes: only what the schema keeps outlives a page', async () => {
    for (let i = 0; i < 6; i++)
      server.putObject(CONFIGMAPS, cm(`c${i}`, { big: 'x'.repeat(1000) }));
    const parsedAtRequest: number[] = [];
    let parsed = 0;
    server.inject((r) => void (r.method === 'GET' && parsedAtRequest.push(parsed)));
    const schema = z
      .looseObject({ metadata: z.looseObject({ name: z.string(), namespace: z.string() }) })
      .transform((o) => {
        parsed++;
        return { metadata: { name: o.metadata.name, namespace: o.metadata.namespace } };
      });
    const cache = start({ pageSize: 2, schema });
    await tick();
    await cache.synced;
    expect(parsedAtRequest).toEqual([0, 2, 4]);
    expect(cache.get('ns/c5')).toEqual({ metadata: { name: 'c5', namespace: 'ns' } });
  });

  it('does not lose a change made while it was paging', async () => {
    for (let i = 0; i < 4; i++) server.putObject(CONFIGMAPS, cm(`c${i}`, { v: '1' }));
    server.inject((r) => {
      if (r.method === 'GET' && r.query['continue']) {
        server.putObject(CONFIGMAPS, cm('c0', { v: '2' })); // already on page 1
        server.deleteObject(CONFIGMAPS, 'c3', 'ns'); // still on the snapshot's page 2
      }
      return undefined;
    });
    const cache = start<ReturnType<typeof cm>>({ pageSize: 2 });
    const calls = record(cache, (o) => `${o.metadata.name}:${o.data['v'] ?? ''}`);
    await tick();
    expect(calls).toEqual([
      'add c0:1',
      'add c1:1',
      'add c2:1',
      'add c3:1',
      'update c0:1->c0:2',
      'delete c3:1',
    ]);
    expect(cache.get('ns/c0')?.data).toEqual({ v: '2' });
    expect(cache.get('ns/c3')).toBeUndefined();
  });

  it('applies watch events in order and hands onDelete the last state', async () => {
    const cache = start<ReturnType<typeof cm>>();
    await tick();
    const calls = record(cache, (o) => `${o.metadata.name}:${o.data['v'] ?? ''}`);
    server.putObject(CONFIGMAPS, cm('a', { v: '1' }));
    server.putObject(CONFIGMAPS, cm('b', { v: '1' }));
    server.putObject(CONFIGMAPS, cm('a', { v: '2' }));
    server.deleteObject(CONFIGMAPS, 'b', 'ns');
    server.putObject(CONFIGMAPS, cm('a', { v: '3' }));
    await tick();
    expect(calls).toEqual([
      'add a:1',
      'add b:1',
      'update a:1->a:2',
      'delete b:1',
      'update a:2->a:3',
    ]);
    expect(cache.lastResourceVersion).toBe(server.resourceVersion);
  });

  it('replays cached objects to a handler added later', async () => {
    server.putObject(CONFIGMAPS, cm('a'));
    const cache = start();
    await tick();
    expect(record(cache)).toEqual(['add a']);
    const quiet: string[] = [];
    cache.addHandler({ onAdd: (o) => quiet.push(o.metadata.name ?? '') }, { replay: false });
    expect(quiet).toEqual([]);
  });

  it('keeps an index (pods by spec.nodeName) up to date', async () => {
    const cache = start<Pod>({
      source: resourceListWatch(server, PODS),
      indexers: { node: (p) => (p.spec?.nodeName ? [p.spec.nodeName] : []) },
    });
    server.putObject(PODS, pod('p1', 'n1'));
    server.putObject(PODS, pod('p2', 'n1'));
    server.putObject(PODS, pod('p3', 'n2'));
    await tick();
    const names = (node: string) =>
      cache
        .byIndex('node', node)
        .map((p) => p.metadata.name)
        .sort();
    expect(names('n1')).toEqual(['p1', 'p2']);
    server.putObject(PODS, pod('p2', 'n2'));
    server.deleteObject(PODS, 'p3', 'ns');
    await tick();
    expect(names('n1')).toEqual(['p1']);
    expect(names('n2')).toEqual(['p2']);
    expect(cache.indexValues('node').sort()).toEqual(['n1', 'n2']);
    expect(() => cache.byIndex('nope', 'x')).toThrow(/no index/);
  });

  it('passes field and label selectors to list and watch, and sees objects leave the selection', async () => {
    server.putObject(PODS, pod('mine', 'n1', { app: 'web' }));
    server.putObject(PODS, pod('other-node', 'n2', { app: 'web' }));
    server.putObject(PODS, pod('other-app', 'n1', { app: 'db' }));
    const cache = start<Pod>({
      source: resourceListWatch(server, PODS),
      fieldSelector: 'spec.nodeName=n1',
      labelSelector: 'app=web',
    });
    await tick();
    const calls = record(cache);
    expect(cache.keys()).toEqual(['ns/mine']);
    for (const r of server.requests) {
      expect(r.query).toMatchObject({
        fieldSelector: 'spec.nodeName=n1',
        labelSelector: 'app=web',
      });
    }
    server.putObject(PODS, pod('mine', 'n2', { app: 'web' }));
    server.putObject(PODS, pod('other-app', 'n1', { app: 'web' }));
    await tick();
    expect(calls).toEqual(['add mine', 'delete mine', 'add other-app']);
    expect(cache.keys()).toEqual(['ns/other-app']);
  });

  it('skips invalid objects with an error log and keeps running', async () => {
    const Schema = z.looseObject({
      metadata: z.looseObject({ name: z.string() }),
      data: z.object({ port: z.string().regex(/^\d+$/) }),
    });
    type Valid = z.infer<typeof Schema> & KubeObject;
    server.putObject(CONFIGMAPS, cm('good', { port: '80' }));
    server.putObject(CONFIGMAPS, cm('bad', { port: 'eighty' }));
    const cache = start<Valid>({ schema: Schema });
    await tick();
    const calls = record(cache);
    expect(cache.keys()).toEqual(['ns/good']);
    expect(log.find('error', 'invalid object skipped')[0]?.meta).toMatchObject({ key: 'ns/bad' });
    server.putObject(CONFIGMAPS, cm('bad', { port: '81' })); // fixed
    server.putObject(CONFIGMAPS, cm('good', { port: 'x' })); // broken: keeps its last valid state
    await tick();
    expect(calls).toEqual(['add good', 'add bad']);
    expect(cache.get('ns/good')?.data.port).toBe('80');
    expect(cache.get('ns/bad')?.data.port).toBe('81');
  });

  it('re-delivers every object as an update on resync', async () => {
    server.putObject(CONFIGMAPS, cm('a'));
    server.putObject(CONFIGMAPS, cm('b'));
    const cache = start({ resyncMs: 500 });
    await tick();
    const calls = record(cache);
    await tick(499);
    expect(calls).toEqual(['add a', 'add b']);
    await tick(1);
    expect(calls.slice(2).sort()).toEqual(['update a->a', 'update b->b']);
    await tick(500);
    expect(calls).toHaveLength(6);
  });

  it('isolates a failing handler from the others', async () => {
    const cache = start();
    await tick();
    cache.addHandler({
      onAdd: () => {
        throw new Error('boom');
      },
    });
    const calls = record(cache);
    server.putObject(CONFIGMAPS, cm('a'));
    await tick();
    expect(calls).toEqual(['add a']);
    expect(log.find('error', 'cache handler failed')).toHaveLength(1);
  });

  it('retries a failing list with backoff, then syncs', async () => {
    let failures = 2;
    server.inject((r) => (r.method === 'GET' && failures-- > 0 ? new Error('refused') : undefined));
    server.putObject(CONFIGMAPS, cm('a'));
    const cache = start();
    await tick(74);
    expect(cache.hasSynced).toBe(false);
    await tick(1 + 150);
    expect(cache.hasSynced).toBe(true);
    expect(log.find('warn', 'list failed')).toHaveLength(2);
  });

  it('waitForSync times out, and stop() before sync rejects synced', async () => {
    server.inject((r) => (r.method === 'GET' ? new Error('refused') : undefined));
    const cache = start();
    const waiting = cache.waitForSync(300);
    const timedOut = expect(waiting).rejects.toThrow(/did not sync within 300 ms/);
    await tick(300);
    await timedOut;
    await cache.stop();
    await expect(cache.synced).rejects.toBeInstanceOf(CacheStoppedError);
  });

  it('stop() right when synced resolves, before the watch started, still ends everything', async () => {
    server.putObject(CONFIGMAPS, cm('a'));
    const cache = start();
    await cache.synced; // this continuation runs before the cache's loop moves on
    await cache.stop();
    await tick(10_000);
    expect(server.openWatches()).toHaveLength(0);
    expect(server.watchStats(resourcePath(CONFIGMAPS)).opened).toBe(0);
  });

  it('stop() closes the watch and makes no more requests', async () => {
    const cache = start();
    await tick();
    expect(server.openWatches()).toHaveLength(1);
    await cache.stop();
    expect(server.openWatches()).toHaveLength(0);
    const before = server.requests.length;
    server.putObject(CONFIGMAPS, cm('a'));
    await tick(10_000);
    expect(server.requests.length).toBe(before);
    expect(cache.size).toBe(0);
  });
});
