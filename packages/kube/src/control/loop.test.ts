import { Registry } from 'prom-client';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { LoopMetrics } from './loop-metrics.js';
import { Loop, type LoopOptions, type LoopRun } from './loop.js';

/** A sync() that records its runs and finishes when the test says so. */
function controlled() {
  const runs: LoopRun[] = [];
  const ends: { resolve: () => void; reject: (e: Error) => void }[] = [];
  let active = 0;
  let maxActive = 0;
  const sync = (run: LoopRun) => {
    runs.push(run);
    maxActive = Math.max(maxActive, ++active);
    return new Promise<void>((resolve, reject) => ends.push({ resolve, reject })).finally(
      () => void active--,
    );
  };
  return {
    sync,
    runs,
    get maxActive() {
      return maxActive;
    },
    finish: () => ends.shift()?.resolve(),
    fail: (message = 'boom') => ends.shift()?.reject(new Error(message)),
  };
}

let loop: Loop<unknown> | undefined;
const make = <T>(options: LoopOptions<T>) => {
  const l = new Loop<T>({ random: () => 0.5, ...options });
  loop = l as Loop<unknown>;
  return l;
};

beforeEach(() => {
  vi.useFakeTimers();
});
afterEach(async () => {
  await loop?.stop();
  loop = undefined;
  vi.useRealTimers();
});

describe('Loop', () => {
  it('coalesces every request during a run into exactly one follow-up run', async () => {
    const c = controlled();
    const l = make({ name: 't', sync: c.sync });
    const first = l.run();
    expect(c.runs).toHaveLength(1);
    const during = [l.run(), l.run(), l.run()];
    l.trigger();
    l.trigger();
    c.finish();
    await first;
    expect(c.runs).toHaveLength(2); // the follow-up started as soon as the first ended
    c.finish();
    await Promise.all(during);
    await vi.advanceTimersByTimeAsync(10_000);
    expect(c.runs).toHaveLength(2);
    expect(c.maxActive).toBe(1);
  });

  it('never overlaps runs, whatever mix of ticks, triggers and retries', async () => {
    let active = 0;
    let maxActive = 0;
    let n = 0;
    const l = make({
      name: 't',
      periodMs: 7,
      backoff: { baseMs: 3, maxMs: 20 },
      sync: async () => {
        maxActive = Math.max(maxActive, ++active);
        await new Promise((r) => setTimeout(r, 1 + (n % 5)));
        active--;
        if (n++ % 3 === 0) throw new Error('every third run fails');
      },
    });
    l.start();
    for (let i = 0; i < 200; i++) {
      if (i % 2) l.trigger(i % 4);
      else void l.run().catch(() => undefined);
      await vi.advanceTimersByTimeAsync(1 + (i % 3));
    }
    expect(l.runs).toBeGreaterThan(50);
    expect(maxActive).toBe(1);
  });

  it('trigger(delay): an earlier pending request wins, so a burst costs one run', async () => {
    const c = controlled();
    const l = make({ name: 't', sync: c.sync, debounceMs: 100 });
    l.trigger();
    await vi.advanceTimersByTimeAsync(50);
    l.trigger(); // does not push the run out
    l.trigger(500);
    await vi.advanceTimersByTimeAsync(49);
    expect(c.runs).toHaveLength(0);
    await vi.advanceTimersByTimeAsync(1);
    expect(c.runs).toHaveLength(1);
    c.finish();
    await vi.advanceTimersByTimeAsync(1000);
    expect(c.runs).toHaveLength(1);
  });

  it('ticks every period, never later than it, and tells sync() it ticked', async () => {
    const c = controlled();
    const l = make({ name: 't', sync: c.sync, periodMs: 1000, periodJitter: 0.2 });
    l.start();
    await vi.advanceTimersByTimeAsync(899);
    expect(c.runs).toHaveLength(0);
    await vi.advanceTimersByTimeAsync(1); // 1000·(1 − 0.2·0.5)
    expect(c.runs).toEqual([{ ticked: true, retry: false }]);
    c.finish();
    await vi.advanceTimersByTimeAsync(900);
    expect(c.runs).toHaveLength(2);
    c.finish();
    await vi.advanceTimersByTimeAsync(0);
    const requested = l.run();
    expect(c.runs.at(-1)).toEqual({ ticked: false, retry: false });
    c.finish();
    await requested;
  });

  it('backs off exponentially with jitter up to the cap on failures, and resets on success', async () => {
    const delays: number[] = [];
    let failing = true;
    let calls = 0;
    const l = make({
      name: 't',
      backoff: { baseMs: 100, maxMs: 1000, jitter: 0.2 },
      sync: () => {
        calls++;
        return failing ? Promise.reject(new Error('down')) : Promise.resolve();
      },
      onError: (_e, retryInMs) => delays.push(retryInMs ?? -1),
    });
    await expect(l.run()).rejects.toThrow('down');
    for (let i = 0; i < 6; i++) await vi.advanceTimersByTimeAsync(delays.at(-1)!);
    // 20 % jitter drawn at 0.5: 90 % of 100, 200, 400, 800, 1000, 1000, 1000.
    expect(delays).toEqual([90, 180, 360, 720, 900, 900, 900]);
    expect(calls).toBe(7);
    failing = false;
    await vi.advanceTimersByTimeAsync(900);
    expect(calls).toBe(8);
    await vi.advanceTimersByTimeAsync(10_000);
    expect(calls).toBe(8); // a success stops the retries
    failing = true;
    await expect(l.run()).rejects.toThrow('down');
    expect(delays.at(-1)).toBe(90); // and starts the backoff over
  });

  it('a retry run says so; a request while a retry waits runs at once and supersedes it', async () => {
    const c = controlled();
    const l = make({ name: 't', sync: c.sync, backoff: { baseMs: 100, maxMs: 100 } });
    void l.run().catch(() => undefined);
    c.fail();
    await vi.advanceTimersByTimeAsync(100);
    expect(c.runs.at(-1)).toEqual({ ticked: false, retry: true });
    c.fail();
    await vi.advanceTimersByTimeAsync(10);
    void l.run();
    expect(c.runs).toHaveLength(3);
    c.finish();
    await vi.advanceTimersByTimeAsync(1000);
    expect(c.runs).toHaveLength(3);
  });

  it('run() resolves with the result of the run that covered it', async () => {
    let n = 0;
    const l = make({ name: 't', sync: () => Promise.resolve(++n) });
    expect(await l.run()).toBe(1);
    expect(await l.run()).toBe(2);
  });

  it('stop() waits for the run in progress, cancels timers and answers waiters with undefined', async () => {
    const c = controlled();
    const l = make({ name: 't', sync: c.sync, periodMs: 10, backoff: { baseMs: 5, maxMs: 5 } });
    l.start();
    const first = l.run();
    const waiting = l.run();
    l.trigger(3);
    let stopped = false;
    const stopping = l.stop().then(() => (stopped = true));
    await vi.advanceTimersByTimeAsync(0);
    expect(stopped).toBe(false);
    expect(await waiting).toBeUndefined();
    c.finish();
    await stopping;
    await first;
    await vi.advanceTimersByTimeAsync(1000);
    expect(c.runs).toHaveLength(1);
    l.trigger();
    expect(await l.run()).toBeUndefined();
    expect(c.runs).toHaveLength(1);
    expect(vi.getTimerCount()).toBe(0);
  });

  it('counts and times every run in LoopMetrics', async () => {
    const registry = new Registry();
    const metrics = new LoopMetrics({ registry, prefix: 'x_' });
    let fail = false;
    const l = make({
      name: 'demo',
      metrics,
      backoff: false,
      sync: () => (fail ? Promise.reject(new Error('no')) : Promise.resolve()),
    });
    const runs = async (result: string) =>
      (await registry.getSingleMetric('x_loop_runs_total')!.get()).values.find(
        (v) => v.labels['loop'] === 'demo' && v.labels['result'] === result,
      )?.value;
    expect(await runs('ok')).toBe(0); // declared before the first run
    await l.run();
    fail = true;
    await expect(l.run()).rejects.toThrow('no');
    expect([await runs('ok'), await runs('error')]).toEqual([1, 1]);
    expect(await registry.getSingleMetricAsString('x_loop_duration_seconds')).toMatch(
      /x_loop_duration_seconds_count\{loop="demo"\} 2/,
    );
  });
});
