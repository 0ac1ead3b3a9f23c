// Test-only: the allocation store's file operations with fault points around the atomic
// replace (temp file created, before the rename, after it), so a crash test can stop the agent
// in the middle of a store write. Passed to AllocationStore only when --test-faults is set.
import { nodeFileSystem, type FileSystem } from '@flock/exec';
import type { FaultHook, StoreFaultPoint } from '../core/faults.js';

export function faultFileSystem(
  fault: FaultHook<StoreFaultPoint>,
  inner: FileSystem = nodeFileSystem,
): FileSystem {
  return {
    readFile: (path) => inner.readFile(path),
    create: async (path, mode) => {
      const file = await inner.create(path, mode);
      await fault('store-after-temp-create');
      return file;
    },
    rename: async (from, to) => {
      await fault('store-before-rename');
      await inner.rename(from, to);
      await fault('store-after-rename');
    },
    unlink: (path) => inner.unlink(path),
    mkdir: (path, mode) => inner.mkdir(path, mode),
    syncDirectory: (path) => inner.syncDirectory(path),
  };
}
