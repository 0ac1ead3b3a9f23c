import fc from 'fast-check';
import { Registry } from 'prom-client';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { WorkQueue } from './queue.js';

const tick = (ms = 0) => vi.advanceTimersByTimeAsync(ms);

beforeEach(() => vi.useFakeTimers());
afterEach(() => vi.useRealTimers());

describe('WorkQueue', () => {
  it('queues a key once however often it is added while waiting', async () => {
    const q = new WorkQueue({ name: 't' });
    q.add('a');
    q.add('b');
    q.add('a');
    expect(q.length).toBe(2);
    expect(await q.get()).toBe('a');
    expect(await q.get()).toBe('b');
    expect(q.length).toBe(0);
  });

  it('never hands out a key that is being processed; re-adds come back after done', async () => {
    const q = new WorkQueue({ name: 't' });
    q.add('a');
    const key = await q.get();
    q.add('a');
    q.add('a');
    expect(q.length).toBe(0); // not handed to a second worker
    let second: string | undefined;
    void q.get().then((k) => (second = k));
    await tick();
    expect(second).toBeUndefined();
    q.done(key as string);
    await tick();
    expect(second).toBe('a'); // exactly once more
    q.done('a');
    expect(q.length).toBe(0);
  });

  it('backs off a failing key exponentially up to the maximum, and forget() resets it', async () => {
    // Each addRateLimited waits base·2^n, capped at the maximum.
    const q2 = new WorkQueue({ name: 't2', backoff: { baseMs: 5, maxMs: 40 } });
    const delays: number[] = [];
    for (let i = 0; i < 6; i++) {
      const start = Date.now();
      q2.addRateLimited('k');
      let got = false;
      void q2.get().then(() => (got = true));
      while (!got) await tick(1);
      delays.push(Date.now() - start);
      q2.done('k');
    }
    expect(delays).toEqual([5, 10, 20, 40, 40, 40]);
    q2.forget('k');
    expect(q2.numRequeues('k')).toBe(0);
    const start = Date.now();
    q2.addRateLimited('k');
    let got = false;
    void q2.get().then(() => (got = true));
    while (!got) await tick(1);
    expect(Date.now() - start).toBe(5);
  });

  it('addAfter delays a key, keeping the earliest of several', async () => {
    const q = new WorkQueue({ name: 't' });
    q.addAfter('a', 100);
    q.addAfter('a', 50);
    q.addAfter('a', 300);
    await tick(49);
    expect(q.length).toBe(0);
    await tick(1);
    expect(q.length).toBe(1);
    await tick(1000);
    expect(q.length).toBe(1); // the later timers were dropped, not queued again
  });

  it('bounds retries overall with a token bucket', async () => {
    const q = new WorkQueue({
      name: 't',
      backoff: { baseMs: 1, maxMs: 1 },
      rateLimit: { qps: 10, burst: 2 },
    });
    for (const k of ['a', 'b', 'c', 'd']) q.addRateLimited(k);
    await tick(1);
    expect(q.length).toBe(2); // the burst
    await tick(99);
    expect(q.length).toBe(3);
    await tick(100);
    expect(q.length).toBe(4);
  });

  it('shutDown() drops queued keys, ends get(), and waits for keys in flight', async () => {
    const q = new WorkQueue({ name: 't' });
    q.add('a');
    q.add('b');
    const a = await q.get();
    let down = false;
    const shut = q.shutDown().then(() => (down = true));
    expect(await q.get()).toBeUndefined();
    q.add('c');
    expect(q.length).toBe(0);
    await tick();
    expect(down).toBe(false);
    q.done(a as string);
    await shut;
    expect(down).toBe(true);
  });

  it('shutDown({drain}) hands out what is queued, including re-adds of keys in flight', async () => {
    const q = new WorkQueue({ name: 't' });
    q.add('a');
    q.add('b');
    const a = await q.get();
    q.add('a'); // re-added while in flight
    const shut = q.shutDown({ drain: true });
    expect(await q.get()).toBe('b');
    q.done('b');
    const again = q.get();
    q.done(a as string);
    expect(await again).toBe('a');
    q.done('a');
    expect(await q.get()).toBeUndefined();
    await shut;
  });

  it('exports depth, adds, retries, in-flight and latency metrics', async () => {
    const registry = new Registry();
    const q = new WorkQueue({ name: 'pools', metrics: { registry, prefix: 'flock_test_' } });
    const value = async (name: string) => {
      const m = (await registry.getMetricsAsJSON()).find((x) => x.name === `flock_test_${name}`);
      return m?.values.find((v) => v.labels['name'] === 'pools' && !('le' in v.labels))?.value;
    };
    q.add('a');
    q.add('b');
    q.add('a');
    expect(await value('workqueue_depth')).toBe(2);
    expect(await value('workqueue_adds_total')).toBe(2);
    const k = await q.get();
    expect(await value('workqueue_in_flight')).toBe(1);
    await tick(250);
    q.done(k as string);
    q.addRateLimited('c');
    expect(await value('workqueue_retries_total')).toBe(1);
    expect(await value('workqueue_in_flight')).toBe(0);
    const work = (await registry.getMetricsAsJSON()).find(
      (x) => x.name === 'flock_test_workqueue_work_duration_seconds',
    );
    expect(
      work?.values.find((v) => (v as { metricName?: string }).metricName?.endsWith('_sum'))?.value,
    ).toBeCloseTo(0.25);
    // A second queue on the same registry shares the metrics under its own label.
    new WorkQueue({ name: 'nodes', metrics: { registry, prefix: 'flock_test_' } }).add('x');
    expect(await value('workqueue_adds_total')).toBe(2);
  });

  it('property: random adds, successes and failures never run a key twice at once and never lose one', async () => {
    type Op = { kind: 'add' | 'get' | 'done' | 'fail' | 'after' | 'wait'; key: number; ms: number };
    const op = fc.record({
      kind: fc.oneof(
        { arbitrary: fc.constant('add'), weight: 3 },
        { arbitrary: fc.constant('get'), weight: 4 },
        { arbitrary: fc.constant('done'), weight: 3 },
        { arbitrary: fc.constant('fail'), weight: 2 },
        { arbitrary: fc.constant('after'), weight: 1 },
        { arbitrary: fc.constant('wait'), weight: 1 },
      ),
      key: fc.integer({ min: 0, max: 4 }),
      ms: fc.integer({ min: 0, max: 50 }),
    }) as fc.Arbitrary<Op>;
    await fc.assert(
      fc.asyncProperty(fc.array(op, { minLength: 10, maxLength: 120 }), async (ops) => {
        const q = new WorkQueue({ name: 'prop', backoff: { baseMs: 5, maxMs: 40 } });
        const running = new Set<string>();
        const lastAdd = new Map<string, number>();
        const lastStart = new Map<string, number>();
        let clock = 0;
        const take = async () => {
          if (q.length === 0) return; // a get() that would wait is never abandoned
          const key = (await q.get()) as string;
          expect(running.has(key)).toBe(false);
          running.add(key);
          lastStart.set(key, ++clock);
        };
        for (const o of ops) {
          const key = `k${o.key}`;
          if (o.kind === 'add') {
            q.add(key);
            lastAdd.set(key, ++clock);
          } else if (o.kind === 'after') {
            q.addAfter(key, o.ms);
            lastAdd.set(key, ++clock);
          } else if (o.kind === 'get') {
            await take();
            await tick(0);
          } else if ((o.kind === 'done' || o.kind === 'fail') && running.has(key)) {
            running.delete(key);
            if (o.kind === 'fail') {
              q.addRateLimited(key);
              lastAdd.set(key, ++clock);
            } else q.forget(key);
            q.done(key);
          } else if (o.kind === 'wait') {
            await tick(o.ms);
          }
        }
        // Finish everything in flight, let every delayed add fire, and drain.
        for (const key of [...running]) {
          running.delete(key);
          q.done(key);
        }
        await tick(10_000);
        for (;;) {
          if (q.length === 0) break;
          const key = (await q.get()) as string;
          lastStart.set(key, ++clock);
          q.done(key);
        }
        // Every key added after its last start was processed again: nothing lost.
        for (const [key, added] of lastAdd) {
          expect((lastStart.get(key) ?? 0) > added).toBe(true);
        }
        expect(q.inFlight).toBe(0);
      }),
      { numRuns: 150 },
    );
  });
});
