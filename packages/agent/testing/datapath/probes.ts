// Kernel-test helpers: read a namespace with `ip -json`, start TCP servers, connect to them,
// and a runner that records every command the datapath runs.
import type { ChildProcess } from 'node:child_process';
import { run, type RunOptions, type RunResult } from '@flock/exec';
import type { Netns } from '@flock/testkit';

export async function ipJson<T = Record<string, unknown>[]>(ns: Netns, args: string[]): Promise<T> {
  return JSON.parse((await ns.exec('ip', ['-json', ...args])).stdout) as T;
}

/** `[addr]:port` for socat, brackets for IPv6. */
export const hostPort = (ip: string, port: number) =>
  ip.includes(':') ? `[${ip}]:${port}` : `${ip}:${port}`;

/** A TCP echo server on every address of the namespace (IPv6 socket, IPv4 mapped). */
export function echoServer(ns: Netns, port: number): ChildProcess {
  return ns.spawn('socat', [`TCP6-LISTEN:${port},reuseaddr,fork`, 'PIPE']);
}

/** A TCP server that sends the file's content to every client and closes. */
export function fileServer(ns: Netns, port: number, file: string): ChildProcess {
  return ns.spawn('socat', ['-U', `TCP6-LISTEN:${port},reuseaddr,fork`, `OPEN:${file}`]);
}

/** Connect from `ns`, send `text`, return what came back. Retries while the server starts. */
export async function tcpExchange(ns: Netns, ip: string, port: number, text = ''): Promise<string> {
  const target = `${ip.includes(':') ? 'TCP6' : 'TCP4'}:${hostPort(ip, port)}`;
  for (let attempt = 0; ; attempt++) {
    try {
      const args = text ? ['-T2', '-', target] : ['-u', target, 'STDOUT'];
      return (await ns.exec('socat', args, { input: text, timeoutMs: 5_000 })).stdout;
    } catch (e) {
      // Only "connection refused" while the server is not listening yet is worth a retry.
      if (attempt >= 20 || !String(e).includes('Connection refused')) throw e;
      await new Promise((r) => setTimeout(r, 50));
    }
  }
}

/** One ICMP echo, no waiting beyond a second: true when it was answered. */
export async function pingOnce(ns: Netns, ip: string): Promise<boolean> {
  const args = [ip.includes(':') ? '-6' : '-4', '-c', '1', '-W', '1', ip];
  const res = await ns.exec('ping', args, { okCodes: [0, 1, 2] });
  return res.code === 0;
}

export interface RecordedCall {
  file: string;
  args: readonly string[];
  input: string;
}

/** @flock/exec's run, recording each call; `writes` are the batches without -json. */
export function recordingRunner() {
  const calls: RecordedCall[] = [];
  const runner = (
    file: string,
    args: readonly string[],
    options?: RunOptions,
  ): Promise<RunResult> => {
    calls.push({ file, args, input: options?.input ?? '' });
    return run(file, args, options);
  };
  const writes = () => calls.filter((c) => c.args.includes('ip') && !c.args.includes('-json'));
  return { calls, runner, writes };
}
