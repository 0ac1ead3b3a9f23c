// The rate of one TCP connection between two network namespaces, measured by the receiver
// (tcp-rate-meter.ts, run by this process's Node in each namespace): what a shaper lets through.
import type { ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import type { RunOptions, RunResult } from '@flock/exec';

// From source (tests) Node runs the .ts itself; from dist the compiled .js.
const METER = fileURLToPath(
  new URL(
    import.meta.url.endsWith('.ts') ? './tcp-rate-meter.ts' : './tcp-rate-meter.js',
    import.meta.url,
  ),
);

/** Where a program runs: a Netns, a lab node, a pod (their own exec and spawn). */
export interface NamespaceRunner {
  exec(file: string, args: readonly string[], options?: RunOptions): Promise<RunResult>;
  spawn(file: string, args: readonly string[]): ChildProcess;
}

/**
 * Bytes per second of one TCP connection from `from` to `host` (an address in `to`), as the
 * receiver counts them over `measureMs` after `warmupMs` (slow start and a shaper's burst left out).
 */
export async function tcpRate(
  from: NamespaceRunner,
  to: NamespaceRunner,
  host: string,
  o: { port?: number; warmupMs?: number; measureMs?: number } = {},
): Promise<number> {
  const port = o.port ?? 5201;
  const [warmupMs, measureMs] = [o.warmupMs ?? 1_000, o.measureMs ?? 3_000];
  const sink = to.spawn(process.execPath, [
    METER,
    'sink',
    `${port}`,
    `${warmupMs}`,
    `${measureMs}`,
  ]);
  let out = '';
  const printed = (line: RegExp) =>
    new Promise<string>((resolve, reject) => {
      const check = () => {
        const m = line.exec(out);
        if (m) resolve(m[0]);
      };
      sink.stdout?.on('data', (d: Buffer) => {
        out += d.toString();
        check();
      });
      sink.once('exit', (code) => reject(new Error(`tcp-rate sink exited (${code}): ${out}`)));
    });
  const ready = printed(/^ready$/m);
  const measured = printed(/^\{.*\}$/m);
  measured.catch(() => undefined); // awaited below, unless the sink never got ready
  try {
    await ready;
    const timeoutMs = warmupMs + measureMs + 30_000;
    await from.exec(process.execPath, [METER, 'send', host, `${port}`], { timeoutMs });
    const { bytes, ms } = JSON.parse(await measured) as { bytes: number; ms: number };
    return (bytes * 1_000) / ms;
  } finally {
    sink.kill();
  }
}
