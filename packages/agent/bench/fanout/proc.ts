// What /proc says of another process: CPU seconds (utime + stime), resident memory, and bytes
// read (rchar: every read(2) — its sockets' TLS bytes, on a watcher nearly all of it).
import { readFile } from 'node:fs/promises';
import { run } from '@flock/exec';

let ticksPerSecond: number | undefined;

/** USER_HZ: `getconf CLK_TCK`, 100 (Linux's value on every architecture) if it cannot say. */
async function clockTicks(): Promise<number> {
  if (ticksPerSecond === undefined) {
    const r = await run('getconf', ['CLK_TCK']).catch(() => undefined);
    const n = Number(r?.stdout.trim());
    ticksPerSecond = Number.isInteger(n) && n > 0 ? n : 100;
  }
  return ticksPerSecond;
}

/** CPU seconds the process has used, user and system. */
export async function cpuSeconds(pid: number): Promise<number> {
  const stat = await readFile(`/proc/${pid}/stat`, 'utf8');
  // Fields after the command name, which may hold spaces: state is field 3, utime 14, stime 15.
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return (Number(fields[11]) + Number(fields[12])) / (await clockTicks());
}

async function statusField(pid: number, file: 'status' | 'io', key: string): Promise<number> {
  const text = await readFile(`/proc/${pid}/${file}`, 'utf8');
  const line = text.split('\n').find((l) => l.startsWith(`${key}:`));
  if (!line) throw new Error(`/proc/${pid}/${file} has no ${key}`);
  return Number(
    line
      .slice(key.length + 1)
      .trim()
      .split(/\s+/)[0],
  );
}

/** Resident memory, bytes. */
export async function rssBytes(pid: number): Promise<number> {
  return (await statusField(pid, 'status', 'VmRSS')) * 1024;
}

/** Bytes the process has read through read(2) and the like. */
export function bytesRead(pid: number): Promise<number> {
  return statusField(pid, 'io', 'rchar');
}
