// Replace a file so that a crash (of flock, or of a reader such as BIRD) at any moment leaves either the old or the new content:
// write a temp file, fsync it, rename it over the target, fsync the directory (the rename
// itself is only durable once the directory is).
import { constants } from 'node:fs';
import * as fsp from 'node:fs/promises';
import { dirname } from 'node:path';

interface WritableFile {
  writeFile(data: string): Promise<void>;
  sync(): Promise<void>;
  close(): Promise<void>;
}

/** The file operations the store uses; `nodeFileSystem` is the real one. */
export interface FileSystem {
  /** The file's text; rejects with ENOENT when it does not exist. */
  readFile(path: string): Promise<string>;
  /** Create (or truncate) a file for writing with the given mode. */
  create(path: string, mode: number): Promise<WritableFile>;
  rename(from: string, to: string): Promise<void>;
  unlink(path: string): Promise<void>;
  mkdir(path: string, mode: number): Promise<void>;
  /** fsync a directory, making renames and creations in it durable. */
  syncDirectory(path: string): Promise<void>;
}

export const nodeFileSystem: FileSystem = {
  readFile: (path) => fsp.readFile(path, 'utf8'),
  create: (path, mode) =>
    fsp.open(
      path,
      constants.O_WRONLY | constants.O_CREAT | constants.O_TRUNC | constants.O_NOFOLLOW,
      mode,
    ),
  rename: (from, to) => fsp.rename(from, to),
  unlink: (path) => fsp.unlink(path),
  mkdir: async (path, mode) => {
    await fsp.mkdir(path, { recursive: true, mode });
  },
  syncDirectory: async (path) => {
    const handle = await fsp.open(path, constants.O_RDONLY | constants.O_DIRECTORY);
    try {
      await handle.sync();
    } finally {
      await handle.close();
    }
  },
};

export const FILE_MODE = 0o600;
const DIRECTORY_MODE = 0o700;

/** The temp file next to `path` that a write goes through. */
export function tempPathOf(path: string): string {
  return `${path}.tmp`;
}

interface AtomicWriteOptions {
  /** File mode of the new file (default 0600; the process umask still applies). */
  mode?: number;
  /** The file operations to use (tests inject failures); default the real file system. */
  fs?: FileSystem;
}

/**
 * Atomically and durably replace `path` with `data`; the directory is created (0700) if
 * missing. On failure before the rename the old file is untouched and the temp file is
 * removed. Callers serialize their own writes to one path (the temp name is fixed).
 */
export async function writeFileAtomic(
  path: string,
  data: string,
  { mode = FILE_MODE, fs = nodeFileSystem }: AtomicWriteOptions = {},
): Promise<void> {
  const dir = dirname(path);
  const temp = tempPathOf(path);
  await fs.mkdir(dir, DIRECTORY_MODE);
  // A leftover temp file (crash mid-write) may have another mode: start from a fresh one.
  await fs.unlink(temp).catch(ignoreMissing);
  let file: WritableFile | undefined;
  try {
    file = await fs.create(temp, mode);
    await file.writeFile(data);
    await file.sync();
    const closing = file;
    file = undefined;
    await closing.close();
    await fs.rename(temp, path);
  } catch (error) {
    await file?.close().catch(() => undefined);
    await fs.unlink(temp).catch(() => undefined);
    throw error;
  }
  await fs.syncDirectory(dir);
}

export function errorCode(error: unknown): string | undefined {
  return error instanceof Error && 'code' in error && typeof error.code === 'string'
    ? error.code
    : undefined;
}

function ignoreMissing(error: unknown): void {
  if (errorCode(error) !== 'ENOENT') throw error;
}

/** The file's content, or undefined when it does not exist. */
export async function readFileIfExists(path: string): Promise<string | undefined> {
  try {
    return await fsp.readFile(path, 'utf8');
  } catch (e) {
    if (errorCode(e) === 'ENOENT') return undefined;
    throw e;
  }
}
