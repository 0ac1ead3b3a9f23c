// Long-running processes of the lab (operator, and every node daemon) and of the chart's tests
// (the assembled agent): output kept (bounded) for failure messages and appended to a log file
// for a person to read; stop = SIGTERM, then SIGKILL.
import { spawn, type ChildProcess } from 'node:child_process';
import { createWriteStream } from 'node:fs';
import { setTimeout as delay } from 'node:timers/promises';

export interface Daemon {
  child: ChildProcess;
  logs: string[];
  exited: Promise<number | string>;
}

/** Follow a started child: keep its last 500 lines, and write them to `logFile` if given. */
export function watchDaemon(child: ChildProcess, logFile?: string): Daemon {
  const logs: string[] = [];
  const file = logFile ? createWriteStream(logFile, { flags: 'a' }) : undefined;
  const keep = (chunk: Buffer) => {
    file?.write(chunk);
    logs.push(...chunk.toString().split('\n').filter(Boolean));
    logs.splice(0, Math.max(0, logs.length - 500));
  };
  child.stdout?.on('data', keep);
  child.stderr?.on('data', keep);
  const exited = new Promise<number | string>((resolve) =>
    child.once('exit', (code, signal) => {
      file?.end();
      resolve(code ?? signal ?? -1);
    }),
  );
  return { child, logs, exited };
}

export function startDaemon(file: string, args: string[], logFile?: string): Daemon {
  // Own process group: Ctrl-C in the lab's terminal reaches the lab, which stops them in order.
  const child = spawn(file, args, { stdio: ['ignore', 'pipe', 'pipe'], detached: true });
  return watchDaemon(child, logFile);
}

export function running(d: Daemon | undefined): d is Daemon {
  return d !== undefined && d.child.exitCode === null && d.child.signalCode === null;
}

export async function stopDaemon(
  d: Daemon | undefined,
  signal: NodeJS.Signals = 'SIGTERM',
): Promise<void> {
  if (!running(d)) return;
  d.child.kill(signal);
  const timer = setTimeout(() => d.child.kill('SIGKILL'), 10_000);
  await d.exited;
  clearTimeout(timer);
}

/** Wait until a daemon logs a line containing `marker`; fail with its last lines if it exits. */
export async function waitForLog(
  d: Daemon,
  what: string,
  marker: string | RegExp,
  timeoutMs: number,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  let exitCode: number | string | undefined;
  void d.exited.then((c) => (exitCode = c));
  const seen = () =>
    d.logs.some((l) => (typeof marker === 'string' ? l.includes(marker) : marker.test(l)));
  while (!seen()) {
    if (exitCode !== undefined)
      throw new Error(`${what} exited (${exitCode}):\n${d.logs.slice(-15).join('\n')}`);
    if (Date.now() > deadline)
      throw new Error(`${what} not ready in time:\n${d.logs.slice(-15).join('\n')}`);
    await delay(200);
  }
}
