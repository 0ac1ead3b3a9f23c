import { describe, expect, it } from 'vitest';
import { Limiter } from './limiter.js';

const tick = () => new Promise((r) => setTimeout(r, 1));

describe('Limiter', () => {
  it('keeps at most `limit` tasks in flight across callers and runs every task', async () => {
    const limiter = new Limiter(3);
    let active = 0;
    let peak = 0;
    const done: number[] = [];
    const task = (i: number) => async () => {
      active++;
      peak = Math.max(peak, active);
      await tick();
      active--;
      done.push(i);
    };
    await Promise.all([
      limiter.each([0, 1, 2, 3, 4], (i) => task(i)()),
      limiter.each([5, 6, 7], (i) => task(i)()),
    ]);
    expect(peak).toBe(3);
    expect(done.sort()).toEqual([0, 1, 2, 3, 4, 5, 6, 7]);
    expect(limiter.inFlight).toBe(0);
  });

  it('collects errors instead of stopping, and skips what has not started once aborted', async () => {
    const limiter = new Limiter(1);
    const abort = new AbortController();
    const ran: number[] = [];
    const errors = await limiter.each(
      [0, 1, 2, 3],
      async (i) => {
        ran.push(i);
        if (i === 0) throw new Error('zero');
        abort.abort();
      },
      abort.signal,
    );
    expect(ran).toEqual([0, 1]);
    expect(errors.map((e) => (e as Error).message)).toEqual(['zero']);
  });

  it('refuses a limit below one', () => {
    expect(() => new Limiter(0)).toThrow(/≥ 1/);
  });
});
