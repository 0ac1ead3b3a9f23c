// CPU time of processes as /proc counts it (clock ticks of utime, stime and, for the children a
// process has waited for, cutime and cstime): a short-lived child such as a CNI plugin or an
// `ip` run shows up in its parent's cutime once reaped. Figures are in milliseconds.
import { readdir, readFile } from 'node:fs/promises';
import { run } from '@flock/exec';

let ticksPerSecond: Promise<number> | undefined;

/** USER_HZ (`getconf CLK_TCK`; 100 on every Linux this runs on). */
function clockTicks(): Promise<number> {
  ticksPerSecond ??= run('getconf', ['CLK_TCK']).then((r) => {
    const hz = Number(r.stdout.trim());
    if (!Number.isInteger(hz) || hz <= 0) throw new Error(`getconf CLK_TCK said ${r.stdout}`);
    return hz;
  });
  return ticksPerSecond;
}

export interface ProcCpu {
  /** The process itself (every thread). */
  own: number;
  /** Its children it has reaped, with what they had reaped. */
  reaped: number;
}

/** undefined when the process is gone. */
export async function procCpu(pid: number | 'self'): Promise<ProcCpu | undefined> {
  const text = await readFile(`/proc/${pid}/stat`, 'utf8').catch(() => undefined);
  if (text === undefined) return undefined;
  // After "pid (comm) ": state is field 3, utime field 14 — index 11 of what follows the comm.
  const f = text
    .slice(text.lastIndexOf(') ') + 2)
    .split(' ')
    .map(Number);
  const ms = 1000 / (await clockTicks());
  return { own: (f[11]! + f[12]!) * ms, reaped: (f[13]! + f[14]!) * ms };
}

/** The pid and every descendant (from /proc/PID/task/TID/children). */
export async function processTree(pid: number): Promise<number[]> {
  const tasks = await readdir(`/proc/${pid}/task`).catch(() => [] as string[]);
  const children: number[] = [];
  for (const tid of tasks) {
    const text = await readFile(`/proc/${pid}/task/${tid}/children`, 'utf8').catch(() => '');
    children.push(...text.split(/\s+/).filter(Boolean).map(Number));
  }
  const below = await Promise.all(children.map(processTree));
  return [pid, ...below.flat()];
}

/**
 * CPU ms of a process and everything below it: the live processes' own and reaped time. A
 * child that exits between two readings moves from "own" to its parent's "reaped": the sum
 * stays whole, as long as the process's own tree reaps its children (an agent does).
 */
export async function treeCpuMs(pid: number): Promise<number> {
  let total = 0;
  for (const p of await processTree(pid)) {
    const c = await procCpu(p);
    if (c) total += c.own + c.reaped;
  }
  return total;
}
