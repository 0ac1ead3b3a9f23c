// Shared by the CNI socket tests: a temp socket path, a raw client that does exactly what it is
// told (for requests the plugin would never send), and a logger that records.
import { mkdtemp, rm } from 'node:fs/promises';
import { createConnection } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Logger } from '@flock/api';

export async function tempSocketPath(): Promise<{
  dir: string;
  socketPath: string;
  cleanup(): Promise<void>;
}> {
  const dir = await mkdtemp(join(tmpdir(), 'flock-sock-'));
  return {
    dir,
    // A sub-directory the server must create itself (mode 0700).
    socketPath: join(dir, 'run', 'cni.sock'),
    cleanup: () => rm(dir, { recursive: true, force: true }),
  };
}

/**
 * Connect, write `payload` (then half-close unless `keepOpen`), and collect everything the
 * server sends until it closes. Resolves with the reply text ('' when none).
 */
export function rawExchange(
  socketPath: string,
  payload: string | Buffer,
  options: { keepOpen?: boolean; timeoutMs?: number } = {},
): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let connected = false;
    const socket = createConnection({ path: socketPath, allowHalfOpen: true });
    const timer = setTimeout(() => {
      socket.destroy();
      reject(new Error('no reply in time'));
    }, options.timeoutMs ?? 5000);
    const done = () => {
      clearTimeout(timer);
      socket.destroy();
      resolve(Buffer.concat(chunks).toString('utf8'));
    };
    socket.on('connect', () => {
      connected = true;
      if (options.keepOpen) socket.write(payload);
      else socket.end(payload);
    });
    socket.on('data', (c: Buffer) => chunks.push(c));
    socket.on('error', (e) => {
      // After connecting, EPIPE/ECONNRESET only mean the server closed while we still sent.
      if (connected) return;
      clearTimeout(timer);
      reject(e);
    });
    socket.on('end', done); // the server's reply is complete
    socket.on('close', done);
  });
}

export interface LogRecord {
  level: keyof Logger;
  message: string;
  meta?: Record<string, unknown>;
}

export function recordingLogger(): Logger & { records: LogRecord[] } {
  const records: LogRecord[] = [];
  const at = (level: keyof Logger) => (message: string, meta?: Record<string, unknown>) =>
    records.push({ level, message, meta });
  return { records, debug: at('debug'), info: at('info'), warn: at('warn'), error: at('error') };
}
