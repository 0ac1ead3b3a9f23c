import { describe, expect, it } from 'vitest';
import { Backoff } from '../core/backoff.js';
import { createMemoryLogger } from '../../testing/memory-logger.js';
import { afterWatch, watchTimeoutSeconds } from './relist-policy.js';
import type { WatchEnd } from './watch-session.js';

function decide(end: WatchEnd, backoff = new Backoff({ baseMs: 100, maxMs: 1000 })) {
  const log = createMemoryLogger();
  const next = afterWatch(end, { backoff, log, meta: { cache: 'c' }, watchdogMs: 5 });
  return { next, backoff, log };
}

describe('relist policy', () => {
  it('relists at once on the first expiry, then backs off while expiries repeat', () => {
    const backoff = new Backoff({ baseMs: 100, maxMs: 1000 });
    expect(decide({ kind: 'expired', productive: true }, backoff).next).toEqual({
      relist: true,
      pauseMs: undefined,
    });
    expect(decide({ kind: 'expired', productive: false }, backoff).next).toEqual({
      relist: true,
      pauseMs: undefined,
    });
    expect(decide({ kind: 'expired', productive: false }, backoff).next).toEqual({
      relist: true,
      pauseMs: 200,
    });
  });

  it('reconnects at once after a productive watch the server closed', () => {
    const backoff = new Backoff({ baseMs: 100, maxMs: 1000 });
    backoff.next();
    const { next } = decide({ kind: 'closed', productive: true }, backoff);
    expect(next).toEqual({ relist: false, pauseMs: undefined });
    expect(backoff.attempts).toBe(0);
  });

  it('backs off after a watch that delivered nothing', () => {
    expect(decide({ kind: 'closed', productive: false }).next).toEqual({
      relist: false,
      pauseMs: 100,
    });
  });

  it('restarts a stalled watch at once, without growing the backoff', () => {
    const { next, backoff, log } = decide({ kind: 'stalled', productive: false });
    expect(next).toEqual({ relist: false, pauseMs: undefined });
    expect(backoff.attempts).toBe(0);
    expect(log.entries).toMatchObject([{ level: 'warn', meta: { watchdogMs: 5 } }]);
  });

  it('backs off after errors even when the watch was productive; an API error relists', () => {
    const err = new Error('x');
    expect(decide({ kind: 'error', productive: true, err }).next).toEqual({
      relist: false,
      pauseMs: 100,
    });
    expect(decide({ kind: 'api-error', productive: true, err }).next).toEqual({
      relist: true,
      pauseMs: 100,
    });
  });

  it('asks for a random server-side watch timeout in [300, 600) s unless one is set', () => {
    expect(watchTimeoutSeconds(undefined, () => 0)).toBe(300);
    expect(watchTimeoutSeconds(undefined, () => 0.999)).toBe(599);
    expect(watchTimeoutSeconds(42, () => 0.5)).toBe(42);
  });
});
