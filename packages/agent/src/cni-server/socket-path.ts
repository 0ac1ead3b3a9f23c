// Where the CNI socket lives: a directory only the agent's user (root) can enter, and no
// file at the socket path except our own stale socket, which is replaced.
import { chmod, lstat, mkdir, unlink } from 'node:fs/promises';
import { createConnection } from 'node:net';
import { dirname, isAbsolute } from 'node:path';
import type { Logger } from '@flock/api';

/** Linux's sun_path holds 108 bytes including the terminating NUL. */
const MAX_SOCKET_PATH_BYTES = 107;

function errno(e: unknown): string | undefined {
  return (e as NodeJS.ErrnoException).code;
}

/** Whether something answers on the socket (then it is not stale: another agent runs). */
function socketAnswers(path: string, timeoutMs = 1000): Promise<boolean> {
  return new Promise((resolve) => {
    const probe = createConnection({ path });
    const done = (live: boolean) => {
      clearTimeout(timer);
      probe.destroy();
      resolve(live);
    };
    // A listener too busy to accept within the timeout is still a listener.
    const timer = setTimeout(() => done(true), timeoutMs);
    probe.on('connect', () => done(true));
    probe.on('error', () => done(false));
  });
}

/**
 * Make `dirname(socketPath)` (mode 0700 when we create it) and clear the socket path.
 * Refuses, with an Error saying why: a directory that is a symlink, not ours or writable by
 * group/others (anyone could swap the socket); a non-socket file at the path; a live socket.
 */
export async function prepareSocketPath(socketPath: string, logger: Logger): Promise<void> {
  if (!isAbsolute(socketPath)) throw new Error(`CNI socket path must be absolute: ${socketPath}`);
  if (Buffer.byteLength(socketPath) > MAX_SOCKET_PATH_BYTES)
    throw new Error(`CNI socket path is longer than ${MAX_SOCKET_PATH_BYTES} bytes: ${socketPath}`);
  const dir = dirname(socketPath);
  const created = await mkdir(dir, { recursive: true, mode: 0o700 });
  if (created !== undefined) await chmod(dir, 0o700); // the umask may have narrowed it; never widened
  const st = await lstat(dir);
  const owner = process.geteuid?.() ?? 0;
  const problem = !st.isDirectory()
    ? 'it is not a directory (symlinks are refused)'
    : st.uid !== owner
      ? `it is owned by uid ${st.uid}, not by the agent's uid ${owner}`
      : (st.mode & 0o022) !== 0
        ? `it is writable by group or others (mode ${(st.mode & 0o7777).toString(8)})`
        : undefined;
  if (problem) {
    logger.error('refusing CNI socket directory', { dir, problem });
    throw new Error(`refusing CNI socket directory ${dir}: ${problem}`);
  }

  const existing = await lstat(socketPath).catch((e: unknown) => {
    if (errno(e) === 'ENOENT') return undefined;
    throw e;
  });
  if (existing === undefined) return;
  if (!existing.isSocket()) {
    logger.error('refusing to replace a non-socket file at the CNI socket path', { socketPath });
    throw new Error(`refusing to replace ${socketPath}: it exists and is not a socket`);
  }
  if (await socketAnswers(socketPath)) {
    logger.error('another process serves the CNI socket', { socketPath });
    throw new Error(`another process is serving ${socketPath} (is a second agent running?)`);
  }
  await unlink(socketPath);
  logger.info('removed stale CNI socket', { socketPath });
}
