// flock-operator as a real child process (node dist/src/main.js): its JSON log lines, its health
// port, its memory as the kernel counts it, and signals to stop or kill it.
import { spawn, type ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { repoRoot } from '@flock/testkit';

export const MAIN = join(
  repoRoot(import.meta.dirname),
  'packages',
  'operator',
  'dist',
  'src',
  'main.js',
);

export interface LogLine {
  level: string;
  message: string;
  component?: string;
  timestamp?: string;
  [key: string]: unknown;
}

export async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const { port } = server.address() as { port: number };
  await new Promise((r) => server.close(r));
  return port;
}

export class OperatorProcess {
  readonly logs: LogLine[] = [];
  /** Lines that were not JSON (there should be none). */
  readonly otherOutput: string[] = [];
  readonly exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  private readonly child: ChildProcess;

  constructor(
    readonly name: string,
    readonly healthPort: number,
    args: string[],
    /** NODE_OPTIONS of the child (V8 heap flags), or none. */
    nodeOptions = '',
  ) {
    const env = { ...process.env, NODE_OPTIONS: nodeOptions };
    this.child = spawn(process.execPath, [MAIN, ...args], {
      stdio: ['ignore', 'pipe', 'pipe'],
      env,
    });
    for (const stream of [this.child.stdout!, this.child.stderr!]) {
      createInterface({ input: stream }).on('line', (line) => {
        try {
          this.logs.push(JSON.parse(line) as LogLine);
        } catch {
          this.otherOutput.push(line);
        }
      });
    }
    this.exited = new Promise((resolve) =>
      this.child.once('exit', (code, signal) => resolve({ code, signal })),
    );
  }

  get pid(): number {
    return this.child.pid as number;
  }

  get running(): boolean {
    return this.child.exitCode === null && this.child.signalCode === null;
  }

  kill(signal: NodeJS.Signals = 'SIGTERM'): void {
    if (this.running) this.child.kill(signal);
  }

  /** GET a path of the health server; undefined when it does not answer. */
  async get(path: string): Promise<{ status: number; text: string } | undefined> {
    try {
      const res = await fetch(`http://127.0.0.1:${this.healthPort}${path}`, {
        signal: AbortSignal.timeout(2_000),
      });
      return { status: res.status, text: await res.text() };
    } catch {
      return undefined;
    }
  }

  /** 1 while it leads, 0 standing by, undefined when it does not answer. */
  async leading(): Promise<number | undefined> {
    const m = await this.get('/metrics');
    const line = m?.text.split('\n').find((l) => l.startsWith('flock_operator_leader_is_leader{'));
    return line === undefined ? undefined : Number(line.split(' ').pop());
  }

  /** Resident set size now and at its peak, in bytes (from /proc). */
  memory(): { rss: number; peak: number } {
    const status = readFileSync(`/proc/${this.pid}/status`, 'utf8');
    const kb = (field: string) =>
      Number(new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(status)?.[1] ?? NaN);
    return { rss: kb('VmRSS') * 1024, peak: kb('VmHWM') * 1024 };
  }

  /** SIGTERM, then SIGKILL if it has not exited after `ms`. */
  async stop(ms = 20_000): Promise<{ code: number | null; signal: NodeJS.Signals | null }> {
    this.kill('SIGTERM');
    const timer = setTimeout(() => this.kill('SIGKILL'), ms);
    try {
      return await this.exited;
    } finally {
      clearTimeout(timer);
    }
  }
}

/** Start `node dist/src/main.js` with a kubeconfig, a free health port and the given flags. */
export async function spawnOperator(
  name: string,
  kubeconfig: string,
  flags: string[] = [],
  nodeOptions = '',
): Promise<OperatorProcess> {
  const port = await freePort();
  return new OperatorProcess(
    name,
    port,
    [
      '--kubeconfig',
      kubeconfig,
      '--identity',
      name,
      '--health-port',
      String(port),
      '--health-host',
      '127.0.0.1',
      ...flags,
    ],
    nodeOptions,
  );
}
