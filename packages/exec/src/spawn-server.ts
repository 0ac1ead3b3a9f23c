// Spawn programs from a small child process instead of this one (see spawn-server-child.ts for
// why). `SpawnServer.run` has run()'s contract — same options, same CommandError — and
// `setRunner(server.run)` routes every run() of the process through it. The child starts on
// first use and again after it died; requests in flight when it dies fail with a CommandError.
import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { CommandError, type RunOptions, type RunResult } from './run.js';
import { SpawnReply, type SpawnRequest } from './spawn-protocol.js';

// Always the built child (under vitest this module runs from src/, next to no .js files).
const CHILD = fileURLToPath(
  new URL(
    import.meta.url.endsWith('.ts')
      ? '../dist/src/spawn-server-child.js'
      : './spawn-server-child.js',
    import.meta.url,
  ),
);

interface Pending {
  file: string;
  args: readonly string[];
  resolve: (r: RunResult) => void;
  reject: (e: Error) => void;
}

const SPAWN_SERVER_NODE_ARGS = [
  '--max-old-space-size=16',
  '--max-semi-space-size=1',
  '--lite-mode',
];

export class SpawnServer {
  private child: ChildProcessWithoutNullStreams | undefined;
  private readonly pending = new Map<number, Pending>();
  private nextId = 0;
  private stopped = false;

  /**
   * Arguments of the child's Node: a small heap keeps its forks cheap, and lite mode (no
   * optimizing compiler: the child only relays lines) keeps its own memory small.
   */
  constructor(private readonly nodeArgs: string[] = SPAWN_SERVER_NODE_ARGS) {}

  readonly run = (
    file: string,
    args: readonly string[],
    options: RunOptions = {},
  ): Promise<RunResult> => {
    if (this.stopped) return Promise.reject(new Error('the spawn server is stopped'));
    const child = this.ensureChild();
    const id = this.nextId++;
    const request: SpawnRequest = {
      id,
      file,
      args: [...args],
      ...(options.input !== undefined ? { input: options.input } : {}),
      ...(options.timeoutMs !== undefined ? { timeoutMs: options.timeoutMs } : {}),
      ...(options.env ? { env: definedOnly(options.env) } : {}),
      ...(options.cwd !== undefined ? { cwd: options.cwd } : {}),
      ...(options.okCodes ? { okCodes: options.okCodes } : {}),
    };
    return new Promise((resolve, reject) => {
      this.pending.set(id, { file, args, resolve, reject });
      if (this.pending.size === 1) this.hold(child, true);
      child.stdin.write(`${JSON.stringify(request)}\n`);
    });
  };

  /** Stop the child; requests still in flight fail. */
  async stop(): Promise<void> {
    this.stopped = true;
    const child = this.child;
    if (!child) return;
    const exited = new Promise((r) => child.once('exit', r));
    child.stdin.end();
    const timer = setTimeout(() => child.kill('SIGKILL'), 2_000);
    await exited;
    clearTimeout(timer);
  }

  private ensureChild(): ChildProcessWithoutNullStreams {
    if (this.child) return this.child;
    const child = spawn(process.execPath, [...this.nodeArgs, CHILD], {
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    this.child = child;
    child.stdin.on('error', () => undefined); // a dead child: its exit handler fails the requests
    child.stderr.on('data', () => undefined);
    createInterface({ input: child.stdout }).on('line', (line) => this.settle(line));
    child.once('exit', (code, signal) => {
      if (this.child === child) this.child = undefined;
      const why = `the spawn server exited (${signal ?? code}) before answering`;
      for (const [id, p] of this.pending) {
        this.pending.delete(id);
        p.reject(new CommandError(p.file, p.args, null, '', '', why));
      }
    });
    this.hold(child, false);
    return child;
  }

  private settle(line: string): void {
    const parsed = SpawnReply.safeParse(safeJson(line));
    if (!parsed.success) return;
    const r = parsed.data;
    const p = this.pending.get(r.id);
    if (!p) return;
    this.pending.delete(r.id);
    if (this.pending.size === 0 && this.child) this.hold(this.child, false);
    if (r.ok) p.resolve({ stdout: r.stdout, stderr: r.stderr, code: r.code });
    else p.reject(new CommandError(p.file, p.args, r.code, r.stderr, r.stdout, r.detail));
  }

  /** Keep the event loop alive only while requests are in flight (an idle child never does). */
  private hold(child: ChildProcessWithoutNullStreams, busy: boolean): void {
    for (const handle of [child, child.stdout, child.stderr, child.stdin] as {
      ref?: () => void;
      unref?: () => void;
    }[])
      if (busy) handle.ref?.();
      else handle.unref?.();
  }
}

function definedOnly(env: NodeJS.ProcessEnv): Record<string, string> {
  return Object.fromEntries(
    Object.entries(env).filter((e): e is [string, string] => e[1] !== undefined),
  );
}

function safeJson(line: string): unknown {
  try {
    return JSON.parse(line) as unknown;
  } catch {
    return undefined;
  }
}
