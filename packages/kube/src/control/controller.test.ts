import { Registry } from 'prom-client';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { Cache } from '../informer/cache.js';
import { Controller, type ControllerOptions, type ReconcileContext } from './controller.js';
import { TerminalError } from '../core/errors.js';
import { FakeApiServer } from '../../testing/fake-apiserver.js';
import { resourceListWatch } from '../informer/listwatch-source.js';
import { createMemoryLogger } from '../../testing/memory-logger.js';
import { CONFIGMAPS } from '../core/resource.js';

const tick = (ms = 0) => vi.advanceTimersByTimeAsync(ms);
let log: ReturnType<typeof createMemoryLogger>;
const running: Controller[] = [];

function controller(
  options: Partial<ControllerOptions> & Pick<ControllerOptions, 'reconcile'>,
): Controller {
  const c = new Controller({
    name: 'test',
    logger: log,
    queue: { backoff: { baseMs: 10, maxMs: 80 } },
    ...options,
  });
  running.push(c);
  return c;
}

beforeEach(() => {
  vi.useFakeTimers();
  log = createMemoryLogger();
});
afterEach(async () => {
  for (const c of running.splice(0)) await c.stop();
  vi.useRealTimers();
});

describe('Controller', () => {
  it('reconciles each key with N workers, never one key twice at once', async () => {
    const active = new Set<string>();
    let maxParallel = 0;
    let overlaps = 0;
    const done: string[] = [];
    const c = controller({
      workers: 3,
      reconcile: async (key) => {
        if (active.has(key)) overlaps++;
        active.add(key);
        maxParallel = Math.max(maxParallel, active.size);
        await new Promise((r) => setTimeout(r, 10));
        active.delete(key);
        done.push(key);
      },
    });
    c.start();
    for (const k of ['a', 'b', 'c', 'd', 'a', 'a']) c.enqueue(k);
    await tick(5);
    c.enqueue('a'); // while a is running: exactly one more run afterwards
    await tick(100);
    expect(maxParallel).toBe(3);
    expect(overlaps).toBe(0);
    expect(done.sort()).toEqual(['a', 'a', 'b', 'c', 'd']);
  });

  it('retries errors with growing backoff and forgets the key after success', async () => {
    const times: number[] = [];
    const failuresSeen: number[] = [];
    let failures = 3;
    const c = controller({
      reconcile: (_key, ctx: ReconcileContext) => {
        times.push(Date.now());
        failuresSeen.push(ctx.failures);
        if (failures-- > 0) throw new Error('not yet');
      },
    });
    c.start();
    const t0 = Date.now();
    c.enqueue('k');
    await tick(1000);
    expect(times.map((t) => t - t0)).toEqual([0, 10, 30, 70]);
    expect(failuresSeen).toEqual([0, 1, 2, 3]);
    expect(c.queue.numRequeues('k')).toBe(0);
    expect(log.find('error', 'retrying with backoff')).toHaveLength(3);
  });

  it('logs a TerminalError and does not retry', async () => {
    let calls = 0;
    const c = controller({
      reconcile: () => {
        calls++;
        throw new TerminalError('pool spec is contradictory');
      },
    });
    c.start();
    c.enqueue('k');
    await tick(10_000);
    expect(calls).toBe(1);
    expect(log.find('error', 'will not be retried')[0]?.meta['err']).toBe(
      'pool spec is contradictory',
    );
  });

  it('honours requeueAfter', async () => {
    const times: number[] = [];
    const c = controller({
      reconcile: () => {
        times.push(Date.now());
        return times.length < 3 ? { requeueAfter: 500 } : undefined;
      },
    });
    c.start();
    const t0 = Date.now();
    c.enqueue('k');
    await tick(5000);
    expect(times.map((t) => t - t0)).toEqual([0, 500, 1000]);
  });

  it('stop() aborts the signal of running reconciles, waits for them and drops queued keys', async () => {
    let seenAbort = false;
    const started: string[] = [];
    const c = controller({
      reconcile: async (key, { signal }) => {
        started.push(key);
        await new Promise<void>((r) => signal.addEventListener('abort', () => r()));
        seenAbort = signal.aborted;
        throw new Error('interrupted');
      },
    });
    c.start();
    c.enqueue('a');
    c.enqueue('b');
    await tick();
    await c.stop();
    expect(seenAbort).toBe(true);
    expect(started).toEqual(['a']);
    expect(log.find('error', 'retrying')).toHaveLength(0);
  });

  it('enqueues keys from cache events, through a mapper', async () => {
    const server = new FakeApiServer();
    server.putObject(CONFIGMAPS, {
      metadata: { name: 'x', namespace: 'ns', labels: { owner: 'o1' } },
    });
    const cache = new Cache({ source: resourceListWatch(server, CONFIGMAPS), logger: log });
    cache.start();
    const seen: string[] = [];
    const c = controller({ reconcile: (key) => void seen.push(key) });
    c.watch(cache);
    c.watch(cache, (o) => o.metadata.labels?.['owner']);
    c.start();
    await tick();
    expect(seen.sort()).toEqual(['ns/x', 'o1']);
    server.putObject(CONFIGMAPS, {
      metadata: { name: 'x', namespace: 'ns', labels: { owner: 'o2' } },
    });
    await tick();
    expect(seen.slice(2).sort()).toEqual(['ns/x', 'o1', 'o2']); // old and new owner
    await cache.stop();
  });

  it('counts results in a metric', async () => {
    const registry = new Registry();
    let n = 0;
    const c = controller({
      metrics: { registry },
      reconcile: () => {
        if (n++ === 0) throw new Error('once');
      },
    });
    c.start();
    c.enqueue('k');
    await tick(100);
    const m = (await registry.getMetricsAsJSON()).find((x) => x.name === 'reconcile_total');
    const by = Object.fromEntries(m?.values.map((v) => [v.labels['result'], v.value]) ?? []);
    expect(by).toEqual({ error: 1, success: 1 });
  });
});
