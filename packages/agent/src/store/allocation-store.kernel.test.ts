// The store against real failures: a full and a read-only file system (a tmpfs mounted in a
// private mount namespace of a child process, so the machine's own mounts are never touched)
// and a writer killed with SIGKILL at arbitrary moments. The children run the built store
// (dist/), inside a network namespace this test owns.
import { mkdir, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { Netns, requireKernelTier } from '@flock/testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AllocationStore } from './allocation-store.js';

const DIST_STORE = pathToFileURL(
  resolve(import.meta.dirname, '../../dist/src/store/allocation-store.js'),
).href;

const ENTRY_JS = `(id) => ({
  containerID: id, ifname: 'eth0', namespace: 'default', pod: 'pod-' + id,
  podUID: '6f1c2a4e-0c1d-4b7e-9a55-3c2d1e0f9a8b', ip6: '2001:db8::' + (1 + Number(id.slice(1))).toString(16),
  pinned: false, anycast: [],
})`;

/** Mount a 64 KiB tmpfs, fill it, then make it read-only, writing to the store each time. */
const FULL_AND_READ_ONLY = `
import { execFileSync } from 'node:child_process';
import { readFileSync, rmSync, writeFileSync } from 'node:fs';
const [, distStore, dir] = process.argv;
const { AllocationStore } = await import(distStore);
const entry = ${ENTRY_JS};
execFileSync('mount', ['-t', 'tmpfs', '-o', 'size=64k,mode=0700', 'flock-store-test', dir]);
const path = dir + '/allocations.json';
const store = new AllocationStore(path);
await store.load();
await store.putPending(entry('c0'));
const attempt = async (what) => {
  const before = readFileSync(path, 'utf8');
  const memory = JSON.stringify(store.entries());
  let error;
  try { await what(); } catch (e) { error = { code: e.code, cause: e.cause?.code, message: e.message }; }
  const reloaded = new AllocationStore(path);
  await reloaded.load();
  return { error, fileKept: readFileSync(path, 'utf8') === before, memoryKept: JSON.stringify(store.entries()) === memory,
           reloaded: reloaded.entries().map((e) => e.containerID + ':' + e.state) };
};
try { writeFileSync(dir + '/filler', Buffer.alloc(1 << 20)); } catch (e) { if (e.code !== 'ENOSPC') throw e; }
const full = await attempt(() => store.putPending(entry('c1')));
rmSync(dir + '/filler');
await store.putPending(entry('c1'));
execFileSync('mount', ['-o', 'remount,ro', dir]);
const readOnly = await attempt(() => store.commit('c1', 'eth0'));
process.stdout.write(JSON.stringify({ full, readOnly }));
`;

/**
 * Write forever (put, then commit, the next container each time), printing each acknowledged
 * write. A pending entry left by the previous kill is committed first, so that every entry
 * but the last is committed.
 */
const WRITER = `
const [, distStore, path] = process.argv;
const { AllocationStore } = await import(distStore);
const entry = ${ENTRY_JS};
const store = new AllocationStore(path);
await store.load();
for (const e of store.entries()) if (e.state === 'pending') await store.commit(e.containerID, e.ifname);
for (let i = store.entries().length; ; i++) {
  await store.putPending(entry('c' + i));
  process.stdout.write('put ' + i + '\\n');
  await store.commit('c' + i, 'eth0');
  process.stdout.write('commit ' + i + '\\n');
}
`;

describe('AllocationStore on real file systems (kernel)', () => {
  let ns: Netns;
  let dir: string;
  beforeAll(async () => {
    requireKernelTier('unshare', 'mount');
    ns = await Netns.create('ipam');
    dir = await mkdtemp(join(tmpdir(), 'flock-store-kernel-'));
  });
  afterAll(async () => {
    await ns?.destroy();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it('keeps the old file and state on ENOSPC and EROFS, and recovers when space returns', async () => {
    const mountpoint = join(dir, 'tmpfs');
    await mkdir(mountpoint);
    const { stdout } = await ns.exec('unshare', [
      '--mount',
      '--propagation',
      'private',
      process.execPath,
      '--input-type=module',
      '-e',
      FULL_AND_READ_ONLY,
      DIST_STORE,
      mountpoint,
    ]);
    const result = JSON.parse(stdout) as Record<
      'full' | 'readOnly',
      {
        error?: { code: string; cause: string; message: string };
        fileKept: boolean;
        memoryKept: boolean;
        reloaded: string[];
      }
    >;
    expect(result.full.error).toMatchObject({ code: 'WriteFailed', cause: 'ENOSPC' });
    expect(result.full).toMatchObject({
      fileKept: true,
      memoryKept: true,
      reloaded: ['c0:pending'],
    });
    expect(result.readOnly.error).toMatchObject({ code: 'WriteFailed', cause: 'EROFS' });
    expect(result.readOnly).toMatchObject({
      fileKept: true,
      memoryKept: true,
      reloaded: ['c0:pending', 'c1:pending'],
    });
  });

  it('always loads a whole state after the writer is killed with SIGKILL mid-write', async () => {
    const path = join(dir, 'killed', 'allocations.json');
    for (let round = 0; round < 12; round++) {
      const killAfter = 2 + Math.floor(Math.random() * 40); // acknowledged writes before the kill
      const child = ns.spawn(process.execPath, [
        '--input-type=module',
        '-e',
        WRITER,
        DIST_STORE,
        path,
      ]);
      const acknowledged: string[] = [];
      let stderr = '';
      child.stderr?.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
      const exited = new Promise<string | null>((done) =>
        child.on('exit', (_code, signal) => done(signal)),
      );
      child.stdout?.on('data', (chunk: Buffer) => {
        acknowledged.push(...chunk.toString().split('\n').filter(Boolean));
        if (acknowledged.length >= killAfter) child.kill('SIGKILL');
      });
      expect(await exited, `the writer died on its own: ${stderr}`).toBe('SIGKILL');

      const store = new AllocationStore(path);
      await store.load(); // never corrupt, never unreadable
      const entries = store.entries();
      // Nothing but whole writes, in order: c0..cN, all committed but possibly the last.
      expect(entries.map((e) => e.containerID)).toEqual(entries.map((_, i) => `c${i}`));
      expect(entries.slice(0, -1).every((e) => e.state === 'committed')).toBe(true);
      // Every acknowledged write survived.
      const [op, index] = (acknowledged.at(-1) ?? '').split(' ');
      const last = entries[Number(index)];
      expect(last, `acknowledged ${op} ${index} is missing`).toBeDefined();
      if (op === 'commit') expect(last?.state).toBe('committed');
    }
  });
});
