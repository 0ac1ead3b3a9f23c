import { afterEach, describe, expect, it, vi } from 'vitest';
import { LARGE_EVENT_BYTES, LargeEventCollector } from './large-event-gc.js';

describe('LargeEventCollector', () => {
  afterEach(() => vi.useRealTimers());

  it('runs one full collection after a burst of large events, none for small ones', () => {
    vi.useFakeTimers();
    const collect = vi.fn();
    const c = new LargeEventCollector(500, collect);
    for (let i = 0; i < 100; i++) c.noteLine(2000);
    vi.advanceTimersByTime(5000);
    expect(collect).not.toHaveBeenCalled();
    for (let i = 0; i < 40; i++) {
      c.noteLine(LARGE_EVENT_BYTES + 190_000);
      vi.advanceTimersByTime(100); // the burst goes on: no collection yet
    }
    expect(collect).not.toHaveBeenCalled();
    vi.advanceTimersByTime(500);
    expect(collect).toHaveBeenCalledTimes(1);
    expect(c.runs).toBe(1);
  });

  it('collects within maxWaitMs while a stream of large events never pauses', () => {
    vi.useFakeTimers();
    const collect = vi.fn();
    const c = new LargeEventCollector(500, collect, 5000);
    for (let i = 0; i < 120; i++) {
      c.noteLine(LARGE_EVENT_BYTES);
      vi.advanceTimersByTime(100); // 12 s of one large line every 100 ms
    }
    // at 5 s and 10 s after the first line of each unbroken stretch, not 500 ms after its end
    expect(collect).toHaveBeenCalledTimes(2);
    vi.advanceTimersByTime(500);
    expect(collect).toHaveBeenCalledTimes(3);
  });

  it('reaches V8 full collection without --expose-gc: garbage is gone after it', async () => {
    let garbage: object | undefined = { big: 'x'.repeat(LARGE_EVENT_BYTES) };
    const ref = new WeakRef(garbage);
    garbage = undefined;
    await new Promise((r) => setTimeout(r, 1)); // a WeakRef holds its target until the job ends
    const c = new LargeEventCollector(1);
    c.noteLine(LARGE_EVENT_BYTES);
    await new Promise((r) => setTimeout(r, 20));
    await new Promise((r) => setTimeout(r, 1));
    expect(c.runs).toBe(1);
    expect(ref.deref()).toBeUndefined();
  });
});
