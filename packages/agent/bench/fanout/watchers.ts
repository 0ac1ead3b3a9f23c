// K watcher processes (watcher.ts), each one agent of a design on its own node name: spawned
// and loaded first, then started together, so that the sync is timed from one instant; asked
// for their reports; stopped. Each runs with the agent image's V8 and malloc settings, but a
// heap that holds every pod of the benchmark's cluster (the image's 128 MiB is for ≤ ~30,000).
import { spawn, type ChildProcess } from 'node:child_process';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { AGENT_MALLOC_ENV } from '../../src/core/image-env.js';
import { nodeName } from './objects.js';
import { bytesRead } from './proc.js';
import type { Command, Reply, Report } from './protocol.js';

const NODE_FLAGS = ['--lite-mode', '--max-semi-space-size=1', '--max-old-space-size=1024'];
const WATCHER = join(import.meta.dirname, 'watcher.js');
/** How long K processes may take to load, and to sync (the issue saw 400 not sync in 200 s). */
const READY_TIMEOUT_MS = 300_000;
const SYNC_TIMEOUT_MS = 1_800_000;

type Kind = Reply['type'];

/** The next reply of this kind; fails on the watcher's failure, exit or `timeoutMs`. */
function next<K extends Kind>(
  child: ChildProcess,
  kind: K,
  timeoutMs: number,
): Promise<Extract<Reply, { type: K }>> {
  return new Promise((resolve, reject) => {
    const done = () => {
      clearTimeout(timer);
      child.off('message', onMessage);
      child.off('exit', onExit);
    };
    const onMessage = (reply: Reply) => {
      if (reply.type === kind) {
        done();
        resolve(reply as Extract<Reply, { type: K }>);
      } else if (reply.type === 'failed') {
        done();
        reject(new Error(`watcher ${child.pid}: ${reply.error}`));
      }
    };
    const onExit = (code: number | null, signal: string | null) => {
      done();
      reject(new Error(`watcher ${child.pid} exited (${code ?? signal}) waiting for ${kind}`));
    };
    const timer = setTimeout(() => {
      done();
      reject(new Error(`watcher ${child.pid}: no ${kind} within ${timeoutMs / 1000} s`));
    }, timeoutMs);
    child.on('message', onMessage);
    child.once('exit', onExit);
  });
}

export class Watchers {
  private constructor(private readonly children: ChildProcess[]) {}

  get pids(): number[] {
    return this.children.map((c) => c.pid as number);
  }

  /**
   * Spawn k watchers of `design` (nodes 0..k-1) and wait until each has loaded; `args` are
   * passed on to each (watcher.ts: the relay's files).
   */
  static async spawn(
    k: number,
    design: string,
    kubeconfig: string,
    args: readonly string[] = [],
  ): Promise<Watchers> {
    const children = Array.from({ length: k }, (_, i) =>
      spawn(
        process.execPath,
        [
          ...NODE_FLAGS,
          WATCHER,
          '--kubeconfig',
          kubeconfig,
          '--node',
          nodeName(i),
          '--design',
          design,
          ...args,
        ],
        {
          stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
          env: { ...process.env, ...AGENT_MALLOC_ENV, NODE_OPTIONS: '' },
        },
      ),
    );
    const watchers = new Watchers(children);
    try {
      await Promise.all(children.map((c) => next(c, 'ready', READY_TIMEOUT_MS)));
    } catch (error) {
      await watchers.stop();
      throw error;
    }
    return watchers;
  }

  private send(command: Command): void {
    for (const c of this.children) c.send(command);
  }

  /** Start every watcher at once; resolves with the ms until the last one synced. */
  async start(): Promise<number> {
    const t0 = performance.now();
    const synced = this.children.map((c) => next(c, 'synced', SYNC_TIMEOUT_MS));
    this.send({ type: 'start' });
    await Promise.all(synced);
    return performance.now() - t0;
  }

  async reports(): Promise<Report[]> {
    const replies = this.children.map((c) => next(c, 'report', 60_000));
    this.send({ type: 'report' });
    return Promise.all(replies);
  }

  bytesRead(): Promise<number[]> {
    return Promise.all(this.pids.map((pid) => bytesRead(pid)));
  }

  /** Stop every watcher (killed if it has not exited after 10 s). */
  async stop(): Promise<void> {
    await Promise.all(
      this.children.map(async (c) => {
        if (c.exitCode !== null || c.signalCode !== null) return;
        const exited = new Promise((r) => c.once('exit', r));
        if (c.connected) c.send({ type: 'stop' } satisfies Command);
        else c.kill('SIGTERM');
        const timer = setTimeout(() => c.kill('SIGKILL'), 10_000);
        await exited;
        clearTimeout(timer);
      }),
    );
  }
}
