// How the cache survives what real API servers and networks do: 410 Gone, resets, silent
// connections, error events, quick closes — always with exactly one watch at a time.
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { Cache, type CacheOptions } from './cache.js';
import { KubeApiError } from '../core/errors.js';
import { FakeApiServer } from '../../testing/fake-apiserver.js';
import { resourceListWatch, type ListWatchSource, type SourceEvent } from './listwatch-source.js';
import { createMemoryLogger } from '../../testing/memory-logger.js';
import { CONFIGMAPS, resourcePath, type KubeObject } from '../core/resource.js';

type CM = KubeObject & { data: Record<string, string> };
const cm = (name: string, v = '1') => ({
  apiVersion: 'v1',
  kind: 'ConfigMap',
  metadata: { name, namespace: 'ns' },
  data: { v },
});
const PATH = resourcePath(CONFIGMAPS);
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
    ...options,
  });
  cache.start();
  return cache;
}

function record(c: Cache<CM>): string[] {
  const calls: string[] = [];
  c.addHandler({
    onAdd: (o) => calls.push(`add ${o.metadata.name}:${o.data['v']}`),
    onUpdate: (a, b) => calls.push(`update ${a.metadata.name}:${a.data['v']}->${b.data['v']}`),
    onDelete: (o) => calls.push(`delete ${o.metadata.name}:${o.data['v']}`),
  });
  return calls;
}

const lists = () => server.requests.filter((r) => r.method === 'GET').length;
const watchAttempts = () => server.requests.filter((r) => r.method === 'WATCH');
const contents = (c: Cache<CM>) =>
  Object.fromEntries(c.list().map((o) => [o.metadata.name, o.data['v']]));
const serverContents = () =>
  Object.fromEntries(server.listObjects<CM>(CONFIGMAPS).map((o) => [o.metadata.name, o.data['v']]));

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

describe('Cache resilience', () => {
  it('relists on a 410 ERROR event and deletes what vanished meanwhile', async () => {
    for (const n of ['a', 'b', 'c']) server.putObject(CONFIGMAPS, cm(n));
    const c = start();
    await tick();
    const calls = record(c);
    server.silenceWatches(); // the changes below never reach the watch
    server.deleteObject(CONFIGMAPS, 'b', 'ns');
    server.putObject(CONFIGMAPS, cm('c', '2'));
    server.putObject(CONFIGMAPS, cm('d'));
    server.compact();
    server.expireWatches();
    await tick();
    expect(lists()).toBe(2);
    expect(calls.slice(3)).toEqual(['delete b:1', 'update a:1->1', 'update c:1->2', 'add d:1']);
    expect(contents(c)).toEqual(serverContents());
    expect(log.find('info', 'watch expired (410)')).toHaveLength(1);
  });

  it('relists when reconnecting from a resourceVersion that was compacted away', async () => {
    server.putObject(CONFIGMAPS, cm('a'));
    const c = start();
    await tick();
    server.silenceWatches();
    server.deleteObject(CONFIGMAPS, 'a', 'ns');
    server.putObject(CONFIGMAPS, cm('b'));
    server.compact();
    server.dropWatches(); // reconnect from the old version -> 410 at once
    await tick(75 + 150);
    expect(lists()).toBe(2);
    expect(contents(c)).toEqual({ b: '1' });
  });

  it('relists when the watch request itself answers 410 Gone', async () => {
    const c = start();
    await tick();
    let gone = 1;
    server.inject((r) =>
      r.method === 'WATCH' && gone-- > 0 ? new KubeApiError(410, 'Gone', 'too old') : undefined,
    );
    server.dropWatches();
    await tick(75 + 150);
    expect(lists()).toBe(2);
    expect(c.hasSynced).toBe(true);
  });

  it('reconnects after resets with exponential, jittered backoff, reset by a healthy watch', async () => {
    const draws = [0.9, 0.1, 0.7, 0.3, 0.5, 0.0, 0.2];
    let i = 0;
    const c = start({ random: () => draws[i++ % draws.length] as number });
    await tick();
    const refuse = server.inject((r) =>
      r.method === 'WATCH' ? new Error('ECONNRESET') : undefined,
    );
    server.dropWatches();
    await tick(20_000);
    const times = watchAttempts().map((r) => r.at);
    const gaps = times.slice(1).map((t, k) => t - (times[k] as number));
    // Delay k is min(1000, 100·2^k) scaled into [½, 1] by the k-th random draw.
    const expected = gaps.map(
      (_, k) => Math.min(1000, 100 * 2 ** k) * (1 - 0.5 * (draws[k % 7] as number)),
    );
    expect(gaps.slice(0, 8)).toEqual(expected.slice(0, 8).map((d) => expect.closeTo(d, 6)));
    expect(gaps[3]).toBeGreaterThan(gaps[2] as number); // grows...
    expect(Math.max(...gaps)).toBeLessThanOrEqual(1000); // ...up to the cap
    expect(new Set(gaps.slice(4)).size).toBeGreaterThan(1); // and is jittered at the cap too
    refuse();
    await tick(1000);
    server.putObject(CONFIGMAPS, cm('a')); // the watch delivers: it is healthy again
    await tick();
    expect(contents(c)).toEqual({ a: '1' });
    const before = watchAttempts().length;
    server.dropWatches();
    await tick(100);
    expect(watchAttempts().length).toBe(before + 1); // back at the base delay (<= 100 ms)
  });

  it('restarts a silent watch after the watchdog timeout and catches up', async () => {
    const c = start();
    await tick();
    server.silenceWatches();
    server.putObject(CONFIGMAPS, cm('missed'));
    await tick(999);
    expect(server.watchStats(PATH).opened).toBe(1);
    await tick(1);
    await tick(75);
    expect(server.watchStats(PATH)).toMatchObject({ opened: 2, open: 1, maxOpen: 1 });
    expect(contents(c)).toEqual({ missed: '1' });
    expect(log.find('warn', 'watch silent for too long')).toHaveLength(1);
  });

  it('restarts a watch that keeps going silent once per watchdog period, with no backoff on top', async () => {
    const c = start({ backoff: { baseMs: 500, maxMs: 60_000, jitter: 0 } });
    await tick();
    for (let k = 0; k < 6; k++) {
      server.silenceWatches();
      await tick(1000);
    }
    server.putObject(CONFIGMAPS, cm('seen'));
    await tick();
    expect(server.watchStats(PATH)).toMatchObject({ opened: 7, open: 1, maxOpen: 1 });
    expect(contents(c)).toEqual({ seen: '1' });
  });

  it('keeps a watch that only receives bookmarks', async () => {
    const c = start();
    await tick();
    for (let k = 0; k < 5; k++) {
      await tick(900);
      server.sendBookmarks();
    }
    await tick();
    expect(server.watchStats(PATH).opened).toBe(1);
    expect(c.lastResourceVersion).toBe(server.resourceVersion);
  });

  it('relists after a non-410 ERROR event', async () => {
    start();
    await tick();
    for (const w of server.openWatches()) w.fail(500, 'InternalError', 'etcd hiccup');
    await tick(75);
    expect(lists()).toBe(2);
    expect(log.find('warn', 'watch failed: relisting')[0]?.meta['err']).toMatch(/etcd hiccup/);
  });

  it('reconnects at once after a normal close, but backs off when watches close empty', async () => {
    const c = start();
    await tick();
    server.putObject(CONFIGMAPS, cm('a'));
    await tick();
    server.endWatches(); // productive watch ended by the server's timeout
    await tick();
    expect(server.watchStats(PATH).opened).toBe(2);
    expect(lists()).toBe(1);
    // A server that closes every watch at once must not cause a hot loop.
    const stop = setInterval(() => server.endWatches(), 1);
    await tick(1000);
    clearInterval(stop);
    expect(server.watchStats(PATH).opened).toBeLessThan(10);
    expect(contents(c)).toEqual({ a: '1' });
  });

  it('aborts a watch before the next one and ignores whatever a superseded watch still sends', async () => {
    const log2: string[] = [];
    const watches: Array<{
      onEvent: (e: SourceEvent<unknown>) => void;
      onDone: (err?: unknown) => void;
    }> = [];
    const source: ListWatchSource = {
      description: 'stub',
      list: () => Promise.resolve({ items: [], resourceVersion: '1' }),
      watch: (_o, onEvent, onDone) => {
        const n = watches.push({ onEvent, onDone });
        log2.push(`watch ${n}`);
        return () => log2.push(`abort ${n}`);
      },
    };
    const c = start({ source, watchdogMs: 60_000 });
    await tick();
    const calls = record(c);
    watches[0]?.onDone(new Error('reset'));
    await tick(75);
    expect(log2).toEqual(['watch 1', 'abort 1', 'watch 2']);
    // A buggy transport keeps talking on the old stream: none of it may count.
    watches[0]?.onEvent({ type: 'ADDED', object: cm('ghost') });
    watches[0]?.onDone(new Error('late'));
    watches[1]?.onEvent({
      type: 'ADDED',
      object: { ...cm('real'), metadata: { name: 'real', namespace: 'ns', resourceVersion: '5' } },
    });
    await tick(5000 - 100);
    expect(calls).toEqual(['add real:1']);
    expect(log2).toEqual(['watch 1', 'abort 1', 'watch 2']);
    expect(c.lastResourceVersion).toBe('5');
  });

  it('never has two watches open, whatever happens', async () => {
    const random = seeded(42);
    const c = start({ random });
    await tick();
    const chaos = [
      () => server.dropWatches(),
      () => server.silenceWatches(),
      () => server.expireWatches(),
      () => server.endWatches(),
      () => server.compact(),
      () => server.sendBookmarks(),
      () => server.putObject(CONFIGMAPS, cm(`o${Math.floor(random() * 5)}`, String(random()))),
      () => server.deleteObject(CONFIGMAPS, `o${Math.floor(random() * 5)}`, 'ns'),
    ];
    for (let k = 0; k < 400; k++) {
      (chaos[Math.floor(random() * chaos.length)] as () => void)();
      await tick(Math.floor(random() * 300));
    }
    await tick(5000); // quiet: everything settles
    expect(server.watchStats(PATH).maxOpen).toBe(1);
    expect(server.watchStats(PATH).open).toBe(1);
    expect(contents(c)).toEqual(serverContents());
  });
});

/** mulberry32: a small seeded PRNG, so the chaos is the same on every run. */
function seeded(seed: number): () => number {
  let a = seed;
  return () => {
    a = (a + 0x6d2b79f5) | 0;
    let t = Math.imul(a ^ (a >>> 15), 1 | a);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}
