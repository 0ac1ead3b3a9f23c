// Replace a file so that a reader (BIRD, or BIRD after a crash and restart) sees either the old
// or the new content, never a mix: temp file in the same directory, fsync, rename, fsync dir.
import { randomBytes } from 'node:crypto';
import { open, readFile, rename, rm } from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';

/** Write `content` to `path` atomically with `mode` (default 0600). */
export async function writeFileAtomic(path: string, content: string, mode = 0o600): Promise<void> {
  const dir = dirname(path);
  const temp = join(dir, `.${basename(path)}.${process.pid}.${randomBytes(4).toString('hex')}.tmp`);
  const file = await open(temp, 'wx', mode);
  try {
    try {
      await file.writeFile(content, 'utf8');
      await file.chmod(mode); // open()'s mode is reduced by the umask
      await file.sync();
    } finally {
      await file.close();
    }
    await rename(temp, path);
  } catch (e) {
    await rm(temp, { force: true });
    throw e;
  }
  const directory = await open(dir, 'r');
  try {
    await directory.sync(); // the rename itself survives a crash
  } finally {
    await directory.close();
  }
}

/** The file's content, or undefined when it does not exist. */
export async function readFileIfExists(path: string): Promise<string | undefined> {
  try {
    return await readFile(path, 'utf8');
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw e;
  }
}
