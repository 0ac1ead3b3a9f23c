// One agent per allocation store. A second instance (a DaemonSet roll with maxSurge, a manual
// run beside the pod) would load the store, take the first one's in-flight ADDs for leftovers
// and tear them down. The lock is an abstract Unix socket named after the store's path: binding
// it is atomic, the kernel lets go of it when the holder dies however it dies (no stale lock
// file, no PID that another PID namespace cannot see), and it is scoped to the network
// namespace, which the agent shares with the node (hostNetwork). Connections to it are closed
// at once: it carries nothing.
import { createHash } from 'node:crypto';
import { createServer, type Server } from 'node:net';
import { resolve } from 'node:path';
import { setTimeout as delay } from 'node:timers/promises';
import type { Logger } from '@flock/api';
import type { Component } from '../core/lifecycle.js';

export class StoreLockedError extends Error {
  constructor(
    readonly storePath: string,
    readonly lockName: string,
    waitedMs: number,
  ) {
    super(
      `the allocation store ${storePath} is in use by another flock agent on this node ` +
        `(it holds the abstract socket @${lockName}; waited ${Math.round(waitedMs / 1000)} s): ` +
        'stop the other agent, or give this one its own --store',
    );
    this.name = 'StoreLockedError';
  }
}

/** The abstract socket name (without the leading NUL) that locks the store at `storePath`. */
export function storeLockName(storePath: string): string {
  const digest = createHash('sha256').update(resolve(storePath)).digest('hex');
  return `flock-agent-store-${digest.slice(0, 32)}`;
}

export interface StoreLock {
  readonly name: string;
  release(): Promise<void>;
}

/**
 * Take the store's lock, waiting up to `waitMs` while another agent holds it (the previous
 * pod of a DaemonSet roll stops within its grace period); `onWait` is told once.
 */
export async function acquireStoreLock(
  storePath: string,
  o: { waitMs: number; retryMs?: number; onWait?: (name: string) => void },
): Promise<StoreLock> {
  const name = storeLockName(storePath);
  const started = Date.now();
  let told = false;
  for (;;) {
    const server = await bindAbstract(name);
    if (server) {
      return {
        name,
        release: () => new Promise<void>((done) => server.close(() => done())),
      };
    }
    const waited = Date.now() - started;
    if (waited >= o.waitMs) throw new StoreLockedError(storePath, name, waited);
    if (!told) o.onWait?.(name);
    told = true;
    await delay(o.retryMs ?? 200);
  }
}

/** Listen on the abstract socket `name`; undefined when another process holds it. */
function bindAbstract(name: string): Promise<Server | undefined> {
  return new Promise((done, fail) => {
    const server = createServer((socket) => socket.destroy());
    server.once('error', (error: NodeJS.ErrnoException) => {
      if (error.code === 'EADDRINUSE') done(undefined);
      else fail(error);
    });
    server.listen({ path: `\0${name}`, exclusive: true }, () => {
      server.unref(); // the lock does not keep the process alive
      done(server);
    });
  });
}

/** The agent's first part: the store's lock, held from start to stop. */
export function storeLockComponent(storePath: string, waitMs: number, logger: Logger): Component {
  let lock: StoreLock | undefined;
  return {
    name: 'allocation store lock',
    start: async () => {
      lock = await acquireStoreLock(storePath, {
        waitMs,
        onWait: (name) =>
          logger.warn('another agent holds the allocation store; waiting for it to stop', {
            store: storePath,
            lock: `@${name}`,
          }),
      });
    },
    stop: () => lock?.release(),
  };
}
