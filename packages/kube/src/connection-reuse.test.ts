import type { KubeConfig } from '@kubernetes/client-node';
import { describe, expect, it, vi } from 'vitest';
import { RETIRED_POOL_GRACE_MS, retireConnections, reuseConnections } from './connection-reuse.js';

const tick = () => new Promise((r) => setTimeout(r, 5));

/** A dispatcher that remembers being closed. */
class FakeDispatcher {
  closed = false;
  constructor(readonly id: number) {}
  async close(): Promise<void> {
    this.closed = true;
  }
}

/** Just what reuseConnections touches: client-node's per-request agent creation. */
function fakeKubeConfig() {
  let made = 0;
  let context = 'a';
  const kc = {
    applySecurityAuthentication: async (ctx: { setDispatcher(d: unknown): void }) => {
      ctx.setDispatcher(new FakeDispatcher(++made));
    },
    getCurrentContext: () => context,
  };
  return { kc: kc as unknown as KubeConfig, switchContext: (c: string) => (context = c) };
}

function request() {
  let dispatcher: FakeDispatcher | undefined;
  return {
    getDispatcher: () => dispatcher,
    setDispatcher: (d: FakeDispatcher) => (dispatcher = d),
  };
}

async function dispatcherOf(kc: KubeConfig): Promise<FakeDispatcher> {
  const ctx = request();
  await kc.applySecurityAuthentication(ctx as never);
  return ctx.getDispatcher()!;
}

describe('reuseConnections', () => {
  it('hands every request the same pool and closes the unused fresh ones', async () => {
    const { kc } = fakeKubeConfig();
    reuseConnections(kc);
    reuseConnections(kc); // idempotent: wrapping twice changes nothing
    const first = await dispatcherOf(kc);
    const again = await dispatcherOf(kc);
    expect(again).toBe(first);
    expect(first.closed).toBe(false);
  });

  it('replaces the pool after maxAge or a context switch, closing the old one', async () => {
    let now = 0;
    const { kc, switchContext } = fakeKubeConfig();
    reuseConnections(kc, 1_000, () => now, 0);
    const first = await dispatcherOf(kc);
    now = 999;
    expect(await dispatcherOf(kc)).toBe(first);
    now = 1_000;
    const second = await dispatcherOf(kc);
    expect(second).not.toBe(first);
    await tick();
    expect(first.closed).toBe(true);
    switchContext('b');
    const third = await dispatcherOf(kc);
    expect(third).not.toBe(second);
    await tick();
    expect(second.closed).toBe(true);
  });

  it('retires the pool on demand (a dead connection): the next request gets a new one', async () => {
    vi.useFakeTimers();
    try {
      const { kc } = fakeKubeConfig();
      reuseConnections(kc);
      const first = await dispatcherOf(kc);
      retireConnections(kc);
      const second = await dispatcherOf(kc);
      expect(second).not.toBe(first);
      expect(await dispatcherOf(kc)).toBe(second);
      // Closed only after the grace: a request that picked it up just before still dispatches.
      vi.advanceTimersByTime(RETIRED_POOL_GRACE_MS - 1);
      expect(first.closed).toBe(false);
      vi.advanceTimersByTime(1);
      expect(first.closed).toBe(true);
    } finally {
      vi.useRealTimers();
    }
  });
});
