// Running a BIRD daemon in the foreground and checking a config with `bird -p`: for tests and
// the lab, which start BIRD inside their own network namespaces (the spawner and exec are
// injected, e.g. Netns.spawn / Netns.exec from @flock/testkit).
import type { ChildProcess } from 'node:child_process';
import { setTimeout as delay } from 'node:timers/promises';
import { CommandError, run, type RunOptions, type RunResult } from '@flock/exec';
import { BirdClient } from '../src/client.js';

type Spawner = (file: string, args: readonly string[]) => ChildProcess;
type Exec = (file: string, args: readonly string[], options?: RunOptions) => Promise<RunResult>;

export interface BirdPaths {
  configPath: string;
  socketPath: string;
  pidPath: string;
}

const MAX_OUTPUT_LINES = 500;

/** A BIRD started with `bird -f`; its output is kept (bounded) for failure messages. */
export class BirdProcess {
  private readonly lines: string[] = [];

  private constructor(
    readonly child: ChildProcess,
    readonly paths: BirdPaths,
  ) {
    const keep = (chunk: Buffer) => {
      this.lines.push(...chunk.toString('utf8').split('\n').filter(Boolean));
      this.lines.splice(0, Math.max(0, this.lines.length - MAX_OUTPUT_LINES));
    };
    // Always drain the pipes: a full pipe would stall BIRD.
    child.stdout?.on('data', keep);
    child.stderr?.on('data', keep);
  }

  /**
   * Start BIRD and wait until its control socket answers (or it exits). `recover`: start in
   * graceful restart recovery (`bird -R`), as after a graceful stop or a crash.
   */
  static async start(
    spawn: Spawner,
    paths: BirdPaths,
    timeoutMs = 10_000,
    { recover = false }: { recover?: boolean } = {},
  ): Promise<BirdProcess> {
    const child = spawn('bird', [
      '-f',
      ...(recover ? ['-R'] : []),
      '-c',
      paths.configPath,
      '-s',
      paths.socketPath,
      '-P',
      paths.pidPath,
    ]);
    const bird = new BirdProcess(child, paths);
    const client = new BirdClient({ socketPath: paths.socketPath, attempts: 1 });
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      if (bird.exited)
        throw new Error(`bird exited at start (code ${child.exitCode}): ${bird.output()}`);
      try {
        await client.command('show status');
        return bird;
      } catch (e) {
        if (Date.now() > deadline) {
          await bird.stop();
          throw new Error(
            `bird did not answer on ${paths.socketPath}: ${String(e)}; output: ${bird.output()}`,
          );
        }
        await delay(50);
      }
    }
  }

  get exited(): boolean {
    return this.child.exitCode !== null || this.child.signalCode !== null;
  }

  /** What BIRD printed (last lines). */
  output(): string {
    return this.lines.join('\n');
  }

  /** Stop BIRD: SIGTERM, then SIGKILL if it has not exited within `graceMs`. */
  async stop(graceMs = 3_000): Promise<void> {
    if (this.exited) return;
    const exited = new Promise<void>((resolve) => this.child.once('exit', () => resolve()));
    this.child.kill('SIGTERM');
    const timer = setTimeout(() => this.child.kill('SIGKILL'), graceMs);
    await exited;
    clearTimeout(timer);
  }
}

/** `bird -p -c FILE`: does BIRD accept the file? The message is BIRD's, with file:line:column. */
export async function checkBirdConfig(
  configPath: string,
  exec: Exec = run,
): Promise<{ ok: true } | { ok: false; message: string }> {
  try {
    await exec('bird', ['-p', '-c', configPath], { timeoutMs: 60_000 });
    return { ok: true };
  } catch (e) {
    if (e instanceof CommandError && e.code !== null) {
      return { ok: false, message: (e.stderr || e.stdout).trim().replace(/^bird: /, '') };
    }
    throw e;
  }
}
