import { describe, expect, it } from 'vitest';
import { SerialTask } from './serial-task.js';

describe('serial task', () => {
  it('never overlaps runs and folds triggers during a run into one re-run', async () => {
    let running = 0;
    let maxRunning = 0;
    let runs = 0;
    let release!: () => void;
    const task = new SerialTask(
      async () => {
        runs++;
        running++;
        maxRunning = Math.max(maxRunning, running);
        if (runs === 1) await new Promise<void>((r) => (release = r));
        running--;
      },
      () => undefined,
    );
    const first = task.trigger();
    const during = [task.trigger(), task.trigger(), task.trigger()];
    release();
    await Promise.all([first, ...during]);
    expect(runs).toBe(2);
    expect(maxRunning).toBe(1);
  });

  it('reports a failing run and keeps working', async () => {
    const errors: unknown[] = [];
    let n = 0;
    const task = new SerialTask(
      async () => {
        if (++n === 1) throw new Error('boom');
      },
      (e) => errors.push(e),
    );
    await task.trigger();
    await task.trigger();
    expect(n).toBe(2);
    expect(errors).toHaveLength(1);
  });

  it('keeps the earliest scheduled run and does nothing after stop()', async () => {
    let runs = 0;
    const task = new SerialTask(
      async () => void runs++,
      () => undefined,
    );
    task.schedule(10_000);
    task.schedule(5);
    task.schedule(20_000);
    await new Promise((r) => setTimeout(r, 50));
    expect(runs).toBe(1);
    task.schedule(5);
    await task.stop();
    await new Promise((r) => setTimeout(r, 30));
    expect(runs).toBe(1);
  });
});
