// CNI DEL, and the orphan sweep's undo of one entry.
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import {
  datapath,
  handlers,
  hostLinks,
  node,
  request,
  setUp,
  store,
  tearDown,
} from '../../testing/cni-handlers.js';

beforeEach(setUp);
afterEach(tearDown);

describe('CNI DEL', () => {
  it('DEL removes everything and is idempotent, also without a netns', async () => {
    await handlers.handle(request('ADD'));
    expect(await handlers.handle(request('DEL'))).toEqual({ ok: true });
    expect(await handlers.handle(request('DEL', { netns: undefined }))).toEqual({ ok: true });
    expect(await handlers.handle(request('DEL', { containerID: 'never-added' }))).toEqual({
      ok: true,
    });
    expect(store.entries()).toEqual([]);
    expect(hostLinks()).toEqual([]);
    expect(node!.allocator.isQuarantined('2001:db8:100::1')).toBe(true);
    // The quarantine is in the store too, for the agent's next start.
    expect(store.released()).toEqual([
      expect.objectContaining({ ip: '2001:db8:100::1', pinned: false }),
      ...(node!.nodeConfig.spec.cidr4 ? [expect.objectContaining({ pinned: false })] : []),
    ]);
  });

  it('DEL of a known pod deletes its veth without reading it first (the store vouches for it)', async () => {
    await handlers.handle(request('ADD'));
    const reads = datapath.memory.reads;
    expect(await handlers.handle(request('DEL'))).toEqual({ ok: true });
    expect(datapath.memory.reads).toBe(reads);
    expect(hostLinks()).toEqual([]);
    // Unknown to the store: the veth's MAC is read before anything is deleted.
    expect(await handlers.handle(request('DEL', { containerID: 'never-added' }))).toEqual({
      ok: true,
    });
    expect(datapath.memory.reads).toBe(reads + 1);
  });
});

describe('undoIfUnchanged (the orphan sweep)', () => {
  it('removes the entry it was given, and nothing that replaced it', async () => {
    await handlers.handle(request('ADD'));
    const stale = store.get('c1', 'eth0')!;
    expect(
      await handlers.undoIfUnchanged({ ...stale, createdAt: '2000-01-01T00:00:00.000Z' }),
    ).toBe(false);
    expect(store.get('c1', 'eth0')).toBeDefined();
    expect(await handlers.undoIfUnchanged(stale)).toBe(true);
    expect(store.get('c1', 'eth0')).toBeUndefined();
    expect(await handlers.undoIfUnchanged(stale)).toBe(false);
  });
});
