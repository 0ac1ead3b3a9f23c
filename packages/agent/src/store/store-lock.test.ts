// The store's lock is a real abstract Unix socket (the unit tier's own network namespace: it
// changes nothing there but a socket name). Its holder's death is the kernel's to notice.
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { describe, expect, it } from 'vitest';
import { acquireStoreLock, storeLockName, StoreLockedError } from './store-lock.js';

const unique = () =>
  `/var/lib/flock-test-${process.pid}-${Math.random().toString(36).slice(2)}.json`;

describe('the allocation store lock', () => {
  it('one holder per store path; another path is another lock; release lets the next one in', async () => {
    const path = unique();
    const first = await acquireStoreLock(path, { waitMs: 0 });
    await expect(acquireStoreLock(path, { waitMs: 0 })).rejects.toBeInstanceOf(StoreLockedError);
    const other = await acquireStoreLock(unique(), { waitMs: 0 });
    await first.release();
    const second = await acquireStoreLock(path, { waitMs: 0 });
    await Promise.all([second.release(), other.release()]);
  });

  it('a waiting agent gets the lock once the holder lets go, and says once that it waits', async () => {
    const path = unique();
    const first = await acquireStoreLock(path, { waitMs: 0 });
    const waits: string[] = [];
    const second = acquireStoreLock(path, {
      waitMs: 10_000,
      retryMs: 20,
      onWait: (n) => waits.push(n),
    });
    await new Promise((r) => setTimeout(r, 100));
    await first.release();
    await (await second).release();
    expect(waits).toEqual([storeLockName(path)]);
  });

  it('the error names the store and what to do; the name does not depend on how the path is spelled', async () => {
    const path = unique();
    expect(storeLockName(path)).toBe(storeLockName(path.replace('/var/lib/', '/var/lib/./')));
    const held = await acquireStoreLock(path, { waitMs: 0 });
    const error = await acquireStoreLock(path, { waitMs: 50, retryMs: 10 }).catch((e) => e);
    expect(String(error)).toMatch(new RegExp(`${path}.*another flock agent.*own --store`));
    await held.release();
  });

  it('a holder killed with SIGKILL leaves no lock behind', async () => {
    const path = unique();
    const name = storeLockName(path);
    // A separate process holds it (as the previous agent pod would) and is killed.
    const holder = spawn(
      process.execPath,
      [
        '-e',
        `require('node:net').createServer().listen({ path: '\\0' + process.argv[1] }, () => console.log('held'))`,
        name,
      ],
      { stdio: ['ignore', 'pipe', 'inherit'] },
    );
    await once(holder.stdout, 'data');
    await expect(acquireStoreLock(path, { waitMs: 0 })).rejects.toBeInstanceOf(StoreLockedError);
    holder.kill('SIGKILL');
    await once(holder, 'exit');
    const lock = await acquireStoreLock(path, { waitMs: 2_000, retryMs: 20 });
    await lock.release();
  });
});
