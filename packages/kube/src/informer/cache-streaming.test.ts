// The cache on servers with streaming lists (WatchList): one watch syncs it (no LIST), a relist
// after 410 is a stream too and deletes what vanished, a change during the stream is not lost,
// and a server that refuses or ignores sendInitialEvents gets paged lists instead.
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { Cache, type CacheOptions } from './cache.js';
import { FakeApiServer } from '../../testing/fake-apiserver.js';
import {
  INITIAL_EVENTS_END,
  resourceListWatch,
  type ListWatchSource,
  type SourceEvent,
} from './listwatch-source.js';
import { createMemoryLogger } from '../../testing/memory-logger.js';
import { CONFIGMAPS, type KubeObject } from '../core/resource.js';

type CM = KubeObject & { data: Record<string, string> };
const cm = (name: string, v = '1') => ({
  apiVersion: 'v1',
  kind: 'ConfigMap',
  metadata: { name, namespace: 'ns' },
  data: { v },
});
const tick = (ms = 0) => vi.advanceTimersByTimeAsync(ms);

let server: FakeApiServer;
let log: ReturnType<typeof createMemoryLogger>;
let cache: Cache<CM> | undefined;

function start(options: Partial<CacheOptions<CM>> = {}): Cache<CM> {
  cache = new Cache<CM>({
    source: resourceListWatch(server, CONFIGMAPS),
    logger: log,
    watchdogMs: 1000,
    watchTimeoutSeconds: 300,
    backoff: { baseMs: 100, maxMs: 1000, jitter: 0.5 },
    random: () => 0.5,
    watchList: true,
    ...options,
  });
  cache.start();
  return cache;
}

const lists = () => server.requests.filter((r) => r.method === 'GET').length;
const watches = () => server.requests.filter((r) => r.method === 'WATCH');
const contents = (c: Cache<CM>) =>
  Object.fromEntries(c.list().map((o) => [o.metadata.name, o.data['v']]));

beforeEach(() => {
  vi.useFakeTimers();
  server = new FakeApiServer();
  log = createMemoryLogger();
});
afterEach(async () => {
  await cache?.stop();
  cache = undefined;
  vi.useRealTimers();
});

describe('Cache with streaming lists', () => {
  it('syncs from one watch that sends the state first (no LIST), then follows changes on it', async () => {
    for (const n of ['a', 'b', 'c']) server.putObject(CONFIGMAPS, cm(n));
    const c = start();
    const adds: string[] = [];
    c.addHandler({ onAdd: (o) => adds.push(o.metadata.name ?? '') });
    await c.synced;
    expect(lists()).toBe(0);
    expect(watches()).toHaveLength(1);
    expect(watches()[0]!.query).toMatchObject({
      sendInitialEvents: true,
      resourceVersionMatch: 'NotOlderThan',
      allowWatchBookmarks: true,
      resourceVersion: '',
    });
    expect(contents(c)).toEqual({ a: '1', b: '1', c: '1' });
    expect(c.lastResourceVersion).toBe(server.resourceVersion);
    server.putObject(CONFIGMAPS, cm('b', '2'));
    await tick();
    expect(contents(c)).toEqual({ a: '1', b: '2', c: '1' });
    expect(watches()).toHaveLength(1);
    expect(adds).toEqual(['a', 'b', 'c']);
  });

  it('is not synced, and delivers nothing, before the bookmark that ends the initial events', async () => {
    server.putObject(CONFIGMAPS, cm('a'));
    const events: ((e: SourceEvent<unknown>) => void)[] = [];
    const source: ListWatchSource = {
      description: 'configmaps (held)',
      list: () => Promise.reject(new Error('no lists here')),
      watch: (_o, onEvent) => {
        events.push(onEvent);
        return () => undefined;
      },
    };
    const c = start({ source });
    const adds: string[] = [];
    c.addHandler({ onAdd: (o) => adds.push(o.metadata.name ?? '') });
    await tick();
    const send = events[0]!;
    send({ type: 'ADDED', object: cm('a') });
    send({ type: 'ADDED', object: cm('b') });
    send({ type: 'DELETED', object: cm('b') });
    send({ type: 'BOOKMARK', object: { metadata: { resourceVersion: '5' } } }); // an ordinary one
    await tick();
    expect(c.hasSynced).toBe(false);
    expect(adds).toEqual([]);
    send({
      type: 'BOOKMARK',
      object: { metadata: { resourceVersion: '7', annotations: { [INITIAL_EVENTS_END]: 'true' } } },
    });
    await tick();
    expect(c.hasSynced).toBe(true);
    expect(adds).toEqual(['a']);
    expect(c.lastResourceVersion).toBe('7');
  });

  it('relists with a stream after 410, deleting what vanished and updating what changed', async () => {
    for (const n of ['a', 'b']) server.putObject(CONFIGMAPS, cm(n));
    const c = start();
    await c.synced;
    const calls: string[] = [];
    c.addHandler(
      {
        onAdd: (o) => calls.push(`add ${o.metadata.name}`),
        onUpdate: (a, b) => calls.push(`update ${a.metadata.name}:${a.data['v']}->${b.data['v']}`),
        onDelete: (o) => calls.push(`delete ${o.metadata.name}`),
      },
      { replay: false },
    );
    server.silenceWatches();
    server.deleteObject(CONFIGMAPS, 'a', 'ns');
    server.putObject(CONFIGMAPS, cm('b', '2'));
    server.putObject(CONFIGMAPS, cm('c'));
    server.compact();
    server.expireWatches();
    await tick();
    expect(lists()).toBe(0);
    expect(watches().filter((w) => w.query['sendInitialEvents'])).toHaveLength(2);
    expect(calls).toEqual(['delete a', 'update b:1->2', 'add c']);
    expect(contents(c)).toEqual({ b: '2', c: '1' });
  });

  it('falls back to paged lists when the server refuses streaming lists (422: an older server)', async () => {
    server = new FakeApiServer({ watchList: false });
    server.putObject(CONFIGMAPS, cm('a'));
    const c = start();
    await tick(200);
    expect(c.hasSynced).toBe(true);
    expect(contents(c)).toEqual({ a: '1' });
    expect(lists()).toBe(1);
    expect(log.find('info', 'does not serve streaming lists')).toHaveLength(1);
    // It stays with lists: a later relist is a list too.
    server.compact();
    server.expireWatches();
    await tick(200);
    expect(lists()).toBe(2);
    expect(watches().filter((w) => w.query['sendInitialEvents'])).toHaveLength(1);
  });

  it('falls back to paged lists when the server ignores sendInitialEvents (never ends the initial events)', async () => {
    server.putObject(CONFIGMAPS, cm('a'));
    const real = resourceListWatch(server, CONFIGMAPS);
    // A server older than WatchList: a plain watch from "now" with synthetic ADDED, no bookmark
    // that ends them; it closes at its timeout.
    const source: ListWatchSource = {
      description: real.description,
      list: (o) => real.list(o),
      watch: (o, onEvent, onDone) => {
        if (!o.sendInitialEvents) return real.watch(o, onEvent, onDone);
        queueMicrotask(() => {
          onEvent({ type: 'ADDED', object: cm('a') });
          onDone();
        });
        return () => undefined;
      },
    };
    const c = start({ source });
    await tick(200);
    expect(c.hasSynced).toBe(true);
    expect(lists()).toBe(1);
    expect(log.find('info', 'does not serve streaming lists')).toHaveLength(1);
  });

  it('a stream that fails before it ends (a reset) is tried again with backoff, still a stream', async () => {
    server.putObject(CONFIGMAPS, cm('a'));
    let resets = 2;
    server.inject((r) =>
      r.method === 'WATCH' && resets-- > 0 ? new Error('ECONNRESET') : undefined,
    );
    const c = start();
    await tick(1000);
    expect(c.hasSynced).toBe(true);
    expect(lists()).toBe(0);
    expect(watches().filter((w) => w.query['sendInitialEvents'])).toHaveLength(3);
  });

  it('selects on the server as a list does', async () => {
    server.putObject(CONFIGMAPS, {
      ...cm('a'),
      metadata: { ...cm('a').metadata, labels: { x: 'y' } },
    });
    server.putObject(CONFIGMAPS, cm('b'));
    const c = start({ labelSelector: 'x=y' });
    await c.synced;
    expect(contents(c)).toEqual({ a: '1' });
  });
});
