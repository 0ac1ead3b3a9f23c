import { Agent, createServer, get, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { RETIRED_POOL_GRACE_MS, SharedPool, closePool } from './connection-reuse.js';

const tick = () => new Promise((r) => setTimeout(r, 5));

/** A pool that remembers being closed. */
class FakePool {
  closed = false;
  constructor(readonly id: number) {}
}

function fakePools(options: { maxAgeMs?: number; now?: () => number; graceMs?: number } = {}) {
  let made = 0;
  const shared = new SharedPool<FakePool>({ close: (p) => (p.closed = true), ...options });
  return { get: (identity = '') => shared.get(identity, () => new FakePool(++made)), shared };
}

describe('SharedPool', () => {
  it('hands every request the same pool', () => {
    const { get } = fakePools();
    const first = get();
    expect(get()).toBe(first);
    expect(first.closed).toBe(false);
  });

  it('replaces the pool after maxAge or a new client identity, closing the old one', async () => {
    let now = 0;
    const { get } = fakePools({ maxAgeMs: 1_000, now: () => now, graceMs: 0 });
    const first = get();
    now = 999;
    expect(get()).toBe(first);
    now = 1_000;
    const second = get();
    expect(second).not.toBe(first);
    await tick();
    expect(first.closed).toBe(true);
    const third = get('a certificate from an exec plugin');
    expect(third).not.toBe(second);
    await tick();
    expect(second.closed).toBe(true);
  });

  it('retires the pool on demand (a dead connection): the next request gets a new one', () => {
    vi.useFakeTimers();
    try {
      const { get, shared } = fakePools();
      const first = get();
      shared.retire();
      const second = get();
      expect(second).not.toBe(first);
      expect(get()).toBe(second);
      // Closed only after the grace: a request that picked it up just before still goes out.
      vi.advanceTimersByTime(RETIRED_POOL_GRACE_MS - 1);
      expect(first.closed).toBe(false);
      vi.advanceTimersByTime(1);
      expect(first.closed).toBe(true);
      shared.retire();
      shared.retire(); // nothing to retire twice
    } finally {
      vi.useRealTimers();
    }
  });
});

describe('closePool', () => {
  let server: Server;
  afterEach(async () => {
    server.closeAllConnections();
    await new Promise((r) => server.close(r));
  });

  it('closes idle connections at once and busy ones when their request ends', async () => {
    const release: Array<() => void> = [];
    server = createServer((req, res) => {
      if (req.url === '/slow') release.push(() => res.end('slow'));
      else res.end('fast');
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const port = (server.address() as AddressInfo).port;
    const agent = new Agent({ keepAlive: true });
    const fetchText = (path: string) =>
      new Promise<string>((resolve, reject) => {
        get({ host: '127.0.0.1', port, path, agent }, (res) => {
          let text = '';
          res.on('data', (c: Buffer) => (text += c.toString()));
          res.on('end', () => resolve(text));
        }).on('error', reject);
      });
    const connections = () => new Promise<number>((r) => server.getConnections((_e, n) => r(n)));
    const slow = fetchText('/slow');
    while (!release.length) await tick();
    expect(await fetchText('/fast')).toBe('fast');
    expect(await connections()).toBe(2); // one idle, one busy
    closePool(agent);
    await tick();
    expect(await connections()).toBe(1);
    release[0]!();
    expect(await slow).toBe('slow'); // the busy request still completes
    await tick();
    expect(await connections()).toBe(0);
    // A late request on the closed pool still works, on a connection of its own.
    expect(await fetchText('/fast')).toBe('fast');
    await tick();
    expect(await connections()).toBe(0);
  });
});
