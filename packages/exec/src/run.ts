// Run a program with an argument array: never a shell, bounded in time and output, and an
// error that says which command failed and what it printed on stderr.
import { spawn } from 'node:child_process';
import { basename } from 'node:path';

export interface RunOptions {
  /** Written to the program's stdin, then stdin is closed. */
  input?: string;
  /** Kill the program after this many milliseconds (default 30 s). */
  timeoutMs?: number;
  /** Extra environment; the parent environment is inherited. */
  env?: NodeJS.ProcessEnv;
  /** Working directory. */
  cwd?: string;
  /** Exit codes that are not an error (default [0]). */
  okCodes?: number[];
}

export interface RunResult {
  stdout: string;
  stderr: string;
  code: number;
}

const MAX_OUTPUT = 64 * 1024 * 1024;

export class CommandError extends Error {
  constructor(
    readonly file: string,
    readonly args: readonly string[],
    readonly code: number | null,
    readonly stderr: string,
    readonly stdout: string,
    readonly detail: string,
  ) {
    super(`${[file, ...args].join(' ')}: ${detail}${stderr.trim() ? `: ${stderr.trim()}` : ''}`);
    this.name = 'CommandError';
  }
}

type Runner = (file: string, args: readonly string[], options?: RunOptions) => Promise<RunResult>;

let delegate: Runner | undefined;
const programs = new Map<string, number>();

/**
 * How many times this process has run each program through `run()`, by its file's name (`ip`,
 * `nft`, ...): a process started each, what a caller's CPU per operation is made of.
 */
export function programsRun(): ReadonlyMap<string, number> {
  return programs;
}

/**
 * Route every `run()` of this process through `runner` (e.g. a SpawnServer), or back to
 * spawning directly with `undefined`.
 */
export function setRunner(runner: Runner | undefined): void {
  delegate = runner;
}

/** Run `file` with `args` and resolve with its output; reject with a CommandError. */
export function run(
  file: string,
  args: readonly string[],
  options: RunOptions = {},
): Promise<RunResult> {
  const name = basename(file);
  programs.set(name, (programs.get(name) ?? 0) + 1);
  return delegate ? delegate(file, args, options) : runDirect(file, args, options);
}

/** `run()` by spawning the program from this process. */
export function runDirect(
  file: string,
  args: readonly string[],
  options: RunOptions = {},
): Promise<RunResult> {
  const { input, timeoutMs = 30_000, env, cwd, okCodes = [0] } = options;
  return new Promise((resolve, reject) => {
    const child = spawn(file, args, {
      stdio: ['pipe', 'pipe', 'pipe'],
      env: env ? { ...process.env, ...env } : process.env,
      cwd,
    });
    const out: Buffer[] = [];
    const err: Buffer[] = [];
    let size = 0;
    let failure: string | undefined;
    const collect = (into: Buffer[]) => (chunk: Buffer) => {
      size += chunk.length;
      if (size > MAX_OUTPUT && !failure) {
        failure = `output exceeded ${MAX_OUTPUT} bytes`;
        child.kill('SIGKILL');
      }
      into.push(chunk);
    };
    child.stdout.on('data', collect(out));
    child.stderr.on('data', collect(err));
    const timer = setTimeout(() => {
      failure = `timed out after ${timeoutMs} ms`;
      child.kill('SIGKILL');
    }, timeoutMs);
    child.on('error', (e: NodeJS.ErrnoException) => {
      clearTimeout(timer);
      const detail = e.code === 'ENOENT' ? 'not found on PATH' : e.message;
      reject(new CommandError(file, args, null, '', '', detail));
    });
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      const stdout = Buffer.concat(out).toString('utf8');
      const stderr = Buffer.concat(err).toString('utf8');
      if (failure) return reject(new CommandError(file, args, code, stderr, stdout, failure));
      if (code === null)
        return reject(new CommandError(file, args, null, stderr, stdout, `killed by ${signal}`));
      if (!okCodes.includes(code))
        return reject(new CommandError(file, args, code, stderr, stdout, `exit code ${code}`));
      resolve({ stdout, stderr, code });
    });
    child.stdin.on('error', () => {
      /* the program may exit before reading its input; its exit code tells what happened */
    });
    child.stdin.end(input ?? '');
  });
}
