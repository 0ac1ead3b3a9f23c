// The allocation store's tests share these: an entry, a store in a temporary directory under a
// fixed clock, and the real file system with one step made to fail.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { nodeFileSystem, type FileSystem } from '@flock/exec';
import { afterEach, beforeEach } from 'vitest';
import { AllocationStore, AllocationStoreError } from '../src/store/allocation-store.js';
import type { NewAllocationEntry } from '../src/store/schema.js';

export const NOW = Date.parse('2026-11-29T12:00:00.000Z');

export const entry = (
  containerID: string,
  extra: Partial<NewAllocationEntry> = {},
): NewAllocationEntry => ({
  containerID,
  ifname: 'eth0',
  namespace: 'default',
  pod: `pod-${containerID}`,
  podUID: '6f1c2a4e-0c1d-4b7e-9a55-3c2d1e0f9a8b',
  ip6: '2001:db8::1',
  ip4: '192.0.2.1',
  pinned: false,
  anycast: [],
  ...extra,
});

/** The real file system with one step made to fail, as a full or read-only disk would. */
export function failing(
  step: 'writeFile' | 'sync' | 'rename' | 'syncDirectory' | 'readFile',
  code: string,
) {
  const state = { armed: true, calls: [] as string[] };
  const fail = () => Object.assign(new Error(`${code}: injected failure`), { code });
  const fs: FileSystem = {
    ...nodeFileSystem,
    readFile: async (path) => {
      if (state.armed && step === 'readFile') throw fail();
      return nodeFileSystem.readFile(path);
    },
    create: async (path, mode) => {
      state.calls.push('create');
      const file = await nodeFileSystem.create(path, mode);
      return {
        writeFile: async (data) => {
          if (state.armed && step === 'writeFile') throw fail();
          return file.writeFile(data);
        },
        sync: async () => {
          if (state.armed && step === 'sync') throw fail();
          return file.sync();
        },
        close: () => file.close(),
      };
    },
    rename: async (from, to) => {
      state.calls.push('rename');
      if (state.armed && step === 'rename') throw fail();
      return nodeFileSystem.rename(from, to);
    },
    syncDirectory: async (path) => {
      if (state.armed && step === 'syncDirectory') throw fail();
      return nodeFileSystem.syncDirectory(path);
    },
  };
  return { fs, state };
}

/**
 * A fresh temporary directory per test (its beforeEach/afterEach): `dir`, and `path`, the store
 * file inside it (its directory not created yet).
 */
export function tempStoreDir(): { readonly dir: string; readonly path: string } {
  const where = { dir: '', path: '' };
  beforeEach(async () => {
    where.dir = await mkdtemp(join(tmpdir(), 'flock-ipam-store-'));
    where.path = join(where.dir, 'state', 'allocations.json');
  });
  afterEach(async () => {
    await rm(where.dir, { recursive: true, force: true });
  });
  return where;
}

/** A store on `path` under the fixed clock, loaded. */
export async function loadedStore(
  path: string,
  options: ConstructorParameters<typeof AllocationStore>[1] = {},
): Promise<AllocationStore> {
  const store = new AllocationStore(path, { now: () => NOW, ...options });
  await store.load();
  return store;
}

/** The store error code a promise rejects with ('resolved' if it does not). */
export const codeOf = async (promise: Promise<unknown>) => {
  try {
    await promise;
    return 'resolved';
  } catch (error) {
    return error instanceof AllocationStoreError ? error.code : String(error);
  }
};
