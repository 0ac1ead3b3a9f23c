// The allocation store when the disk fails: an unreadable file, a write that fails at any step,
// concurrent changes written together, a temp file left by a crash.
import { mkdir, readFile, readdir, stat, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { tempPathOf } from '@flock/exec';
import { describe, expect, it } from 'vitest';
import { AllocationStore, type AllocationStoreError } from './allocation-store.js';
import {
  codeOf,
  entry,
  failing,
  loadedStore,
  tempStoreDir,
} from '../../testing/allocation-store.js';

const disk = tempStoreDir();

const loaded = (options: Parameters<typeof loadedStore>[1] = {}) => loadedStore(disk.path, options);

describe('AllocationStore on a failing disk', () => {
  it('reports an unreadable file and does not start empty', async () => {
    await mkdir(disk.path, { recursive: true }); // a directory where the file should be: EISDIR
    const error = await new AllocationStore(disk.path).load().catch((e: unknown) => e);
    expect((error as AllocationStoreError).code).toBe('Unreadable');
    expect((error as Error).message).toContain('left as it is');
    const { fs } = failing('readFile', 'EACCES');
    expect(
      await codeOf(new AllocationStore(join(disk.dir, 'x.json'), { fileSystem: fs }).load()),
    ).toBe('Unreadable');
  });

  for (const [step, code] of [
    ['writeFile', 'ENOSPC'],
    ['sync', 'EIO'],
    ['rename', 'EROFS'],
  ] as const) {
    it(`keeps the old file and the in-memory state when ${step} fails with ${code}`, async () => {
      const { fs, state } = failing(step, code);
      state.armed = false;
      const store = await loaded({ fileSystem: fs });
      await store.putPending(entry('a'));
      const before = await readFile(disk.path, 'utf8');
      state.armed = true;
      const error = await store
        .putPending(entry('b', { ip6: '2001:db8::2' }))
        .catch((e: unknown) => e);
      expect((error as AllocationStoreError).code).toBe('WriteFailed');
      expect((error as Error).message).toContain(code);
      expect(await readFile(disk.path, 'utf8')).toBe(before);
      expect(store.entries().map((e) => e.containerID)).toEqual(['a']);
      expect(await readdir(join(disk.dir, 'state'))).toEqual(['allocations.json']); // temp file removed
      expect(await codeOf(store.commit('a', 'eth0'))).toBe('WriteFailed');
      expect(store.get('a', 'eth0')?.state).toBe('pending');
      state.armed = false;
      await store.putPending(entry('b', { ip6: '2001:db8::2' }));
      expect((await loaded()).entries().map((e) => e.containerID)).toEqual(['a', 'b']);
    });
  }

  it('writes concurrent changes together, never two writes at once', async () => {
    const { fs, state } = failing('rename', 'EIO');
    state.armed = false;
    const store = await loaded({ fileSystem: fs });
    const ids = Array.from({ length: 40 }, (_, i) => `c${i}`);
    const put = (id: string, i: number) =>
      store.putPending(entry(id, { ip6: `2001:db8::${i + 1}` }));
    await Promise.all([...ids.slice(0, 20).map(put), store.remove('nothing', 'eth0')]);
    expect(state.calls).toEqual(['create', 'rename']);
    // One change writes alone; those asked for during its write go out together after it.
    const first = put(ids[20]!, 20);
    while (state.calls.length < 3) await new Promise((r) => setImmediate(r)); // its write began
    const rest = ids.slice(21).map((id, i) => put(id, i + 21));
    await Promise.all([first, ...rest]);
    expect(state.calls).toEqual(['create', 'rename', 'create', 'rename', 'create', 'rename']);
    expect((await loaded()).entries().map((e) => e.containerID)).toEqual(ids);
  });

  it('fails every change of a failed write, keeps the old state, and writes again after', async () => {
    const { fs, state } = failing('rename', 'EIO');
    const store = await loaded({ fileSystem: fs });
    const results = await Promise.allSettled([
      store.remove('nothing', 'eth0'), // a no-op before any change does not depend on the write
      store.putPending(entry('a')),
      store.commit('a', 'eth0'),
    ]);
    expect(results.map((r) => r.status)).toEqual(['fulfilled', 'rejected', 'rejected']);
    expect(store.entries()).toEqual([]);
    state.armed = false;
    await store.putPending(entry('a'));
    expect((await loaded()).entries().map((e) => e.state)).toEqual(['pending']);
  });

  it('keeps serving after a failed write in the middle of a queue', async () => {
    const store = await loaded();
    const results = await Promise.allSettled([
      store.putPending(entry('a')),
      store.putPending(entry('a')),
      store.putPending(entry('b', { ip6: '2001:db8::2' })),
    ]);
    expect(results.map((r) => r.status)).toEqual(['fulfilled', 'rejected', 'fulfilled']);
  });

  it('ignores a temp file left by a crash mid-write and replaces it on the next write', async () => {
    const store = await loaded();
    await store.putPending(entry('a'));
    await writeFile(tempPathOf(disk.path), '{"version":1,"entries":[{"contai', { mode: 0o644 });
    const again = await loaded();
    expect(again.entries()).toEqual(store.entries());
    await again.commit('a', 'eth0');
    expect(await readdir(join(disk.dir, 'state'))).toEqual([
      'allocations.json',
      'allocations.json.previous',
    ]);
    expect((await stat(disk.path)).mode & 0o777).toBe(0o600);
  });
});
