// Properties of the store on a real directory: any sequence of changes reloads to exactly
// the same entries, and a crash mid-write (a truncated temp file, or a write that stops at
// any step) loads the state before the write (or after it, once the rename happened).
import fc from 'fast-check';
import { copyFile, mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { formatAddress } from '@flock/ipam';
import { AllocationStore } from './allocation-store.js';
import { nodeFileSystem, tempPathOf, type FileSystem } from '@flock/exec';
import type { NewAllocationEntry } from './schema.js';

const ipv6 = fc.bigInt({ min: 0n, max: (1n << 128n) - 1n }).map((v) => formatAddress(6, v));
const ipv4 = fc.bigInt({ min: 0n, max: (1n << 32n) - 1n }).map((v) => formatAddress(4, v));

const newEntry: fc.Arbitrary<NewAllocationEntry> = fc.record(
  {
    containerID: fc.stringMatching(/^[A-Za-z0-9][A-Za-z0-9_.-]{0,70}$/),
    ifname: fc.constantFrom('eth0', 'net1', 'x.y-z_', 'abcdefghijklmno'),
    namespace: fc.stringMatching(/^[a-z0-9]([-a-z0-9]{0,20}[a-z0-9])?$/),
    pod: fc.stringMatching(/^[a-z0-9]([-a-z0-9]{0,20}[a-z0-9])?(\.[a-z0-9]{1,5})?$/),
    podUID: fc.uuid(),
    ip6: ipv6,
    ip4: ipv4,
    pinned: fc.boolean(),
    anycast: fc.uniqueArray(fc.oneof(ipv6, ipv4), { maxLength: 16 }),
  },
  {
    requiredKeys: [
      'containerID',
      'ifname',
      'namespace',
      'pod',
      'podUID',
      'ip6',
      'pinned',
      'anycast',
    ],
  },
);

type Op = { kind: 'put'; entry: NewAllocationEntry } | { kind: 'commit' | 'remove'; pick: number };
const op: fc.Arbitrary<Op> = fc.oneof(
  { weight: 3, arbitrary: newEntry.map((entry) => ({ kind: 'put' as const, entry })) },
  {
    weight: 2,
    arbitrary: fc.record({
      kind: fc.constantFrom('commit' as const, 'remove' as const),
      pick: fc.nat(),
    }),
  },
);

/** Apply one change; duplicates and missing entries are skipped (they do not write). */
async function apply(store: AllocationStore, o: Op): Promise<void> {
  if (o.kind === 'put') {
    if (!store.get(o.entry.containerID, o.entry.ifname)) await store.putPending(o.entry);
    return;
  }
  const list = store.entries();
  const target = list[o.pick % Math.max(list.length, 1)];
  if (!target) return;
  if (o.kind === 'commit') await store.commit(target.containerID, target.ifname);
  else await store.remove(target.containerID, target.ifname);
}

let root: string;
let counter = 0;
beforeAll(async () => {
  root = await mkdtemp(join(tmpdir(), 'flock-ipam-prop-'));
});
afterAll(async () => {
  await rm(root, { recursive: true, force: true });
});
const freshPath = () => join(root, `run-${counter++}`, 'allocations.json');

describe('allocation store properties', () => {
  it('reloads exactly the entries it holds after any sequence of changes', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(op, { maxLength: 12 }), async (ops) => {
        const path = freshPath();
        const store = new AllocationStore(path);
        await store.load();
        for (const o of ops) await apply(store, o);
        const again = new AllocationStore(path);
        await again.load();
        expect(again.entries()).toEqual(store.entries());
      }),
      { numRuns: 40 },
    );
  });

  it('loads the previous state when killed mid-write (truncated temp file)', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(op, { maxLength: 6 }),
        op,
        fc.double({ min: 0, max: 1, noNaN: true }),
        async (ops, last, cut) => {
          const path = freshPath();
          const store = new AllocationStore(path);
          await store.load();
          for (const o of ops) await apply(store, o);
          const before = store.entries();
          // What the next write would have put on disk, computed on a copy.
          const scratch = `${path}.scratch`;
          await mkdir(dirname(path), { recursive: true });
          await copyFile(path, scratch).catch(() =>
            writeFile(scratch, '{"version":1,"entries":[]}'),
          );
          const copy = new AllocationStore(scratch);
          await copy.load();
          await apply(copy, last);
          const next = await readFile(scratch, 'utf8');
          await rm(scratch);
          await writeFile(tempPathOf(path), next.slice(0, Math.floor(next.length * cut)));
          const after = new AllocationStore(path);
          await after.load();
          expect(after.entries()).toEqual(before);
        },
      ),
      { numRuns: 40 },
    );
  });

  it('loads the old or the new state when a write stops at any step', async () => {
    const steps = ['create', 'writeFile', 'sync', 'close', 'rename', 'syncDirectory'] as const;
    await fc.assert(
      fc.asyncProperty(
        fc.array(op, { maxLength: 6 }),
        newEntry,
        fc.constantFrom(...steps),
        async (ops, entry, stop) => {
          const path = freshPath();
          let armed = false;
          let died = false;
          // The process "dies" at `stop`: that step and everything after it never happen.
          const killed = () => Object.assign(new Error('killed'), { code: 'EKILLED' });
          const guard = async <T>(
            step: (typeof steps)[number],
            run: () => Promise<T>,
          ): Promise<T> => {
            if (died || (armed && steps.indexOf(step) >= steps.indexOf(stop))) {
              died = true;
              throw killed();
            }
            return run();
          };
          const fs: FileSystem = {
            ...nodeFileSystem,
            unlink: (p) => (died ? Promise.reject(killed()) : nodeFileSystem.unlink(p)),
            create: (p, mode) =>
              guard('create', async () => {
                const file = await nodeFileSystem.create(p, mode);
                return {
                  writeFile: (data: string) => guard('writeFile', () => file.writeFile(data)),
                  sync: () => guard('sync', () => file.sync()),
                  close: () =>
                    guard('close', () => file.close()).catch(async (e: unknown) => {
                      await file.close(); // the kernel closes a dead process's files
                      throw e;
                    }),
                };
              }),
            rename: (a, b) => guard('rename', () => nodeFileSystem.rename(a, b)),
            syncDirectory: (p) => guard('syncDirectory', () => nodeFileSystem.syncDirectory(p)),
          };
          const store = new AllocationStore(path, { fileSystem: fs });
          await store.load();
          for (const o of ops) await apply(store, o);
          const before = store.entries();
          armed = true;
          const fresh = { ...entry, containerID: `new-${entry.containerID}`.slice(0, 70) };
          await expect(store.putPending(fresh)).rejects.toThrow();
          const after = new AllocationStore(path);
          await after.load();
          const keys = after.entries().map((e) => e.containerID);
          if (stop === 'syncDirectory')
            expect(keys).toEqual([...before.map((e) => e.containerID), fresh.containerID]);
          else expect(after.entries()).toEqual(before);
        },
      ),
      { numRuns: 40 },
    );
  });
});
