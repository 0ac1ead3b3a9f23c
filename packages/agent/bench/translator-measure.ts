// What the translator benchmarks (nat64/, siit/) measure, the same way: one iperf3 stream's
// throughput, the translators' CPU per gigabit, and sequential new TCP connections a second
// (connect + a byte + close; the server closes first, as an HTTP server with
// `Connection: close`). Not a test.
import { cpus, release } from 'node:os';
import { run } from '@flock/exec';
import type { Netns } from '@flock/testkit';

/** Node: `count` sequential connections to [host]:7000; prints the milliseconds they took. */
export const CONNECT_LOOP = `
const net = require('node:net');
const [host, count] = [process.argv[1], Number(process.argv[2])];
const one = () => new Promise((resolve, reject) => {
  const s = net.connect({ host, port: 7000 });
  s.once('data', () => { s.destroy(); resolve(); });
  s.once('error', reject);
});
(async () => {
  const t0 = process.hrtime.bigint();
  for (let i = 0; i < count; i++) await one();
  console.log(String(Number(process.hrtime.bigint() - t0) / 1e6));
})().catch((e) => { console.error(String(e)); process.exit(1); });
`;

/** Node: answer each connection on [argv 1 or 0.0.0.0]:7000 with a byte and close it. */
export const ACCEPT_LOOP = `
require('node:net').createServer((s) => { s.on('error', () => {}); s.end('x'); })
  .listen({ host: process.argv[1] ?? '0.0.0.0', port: 7000 }, () => console.log('ready'));
`;

function option(name: string, fallback: number): number {
  const at = process.argv.indexOf(name);
  return at >= 0 ? Number(process.argv[at + 1]) : fallback;
}

/** --rounds N (after a warm-up round), --seconds S of iperf3, --conns N a sample. */
export const benchOptions = () => ({
  rounds: option('--rounds', 3),
  seconds: option('--seconds', 5),
  conns: option('--conns', 2000),
});

/** The first line: what ran, where, with which Tayga, under which load. */
export async function benchHeader(
  title: string,
  o: { rounds: number; seconds: number; conns: number },
): Promise<string> {
  const load = (await run('cat', ['/proc/loadavg'])).stdout.split(' ').slice(0, 3).join(' ');
  const version = (
    await run('dpkg-query', ['-W', '-f', '${Version}', 'tayga'], { okCodes: [0, 1] })
  ).stdout;
  return `# ${title} — ${new Date().toISOString()}, ${cpus().length} × ${cpus()[0]?.model}, kernel ${release()}, node ${process.version}, tayga ${version || '(version unknown)'}, ${o.rounds} rounds, ${o.seconds} s iperf3, ${o.conns} connections a sample, load ${load}`;
}

export const med = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  const m = Math.floor(s.length / 2);
  return s.length % 2 ? s[m]! : (s[m - 1]! + s[m]!) / 2;
};

/** CPU seconds (user + system) of a process so far. */
export async function cpuSeconds(pid: number): Promise<number> {
  const stat = (await run('cat', [`/proc/${pid}/stat`])).stdout;
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return (Number(fields[11]) + Number(fields[12])) / 100; // utime, stime in clock ticks (USER_HZ 100)
}

export interface Sample {
  gbit: number;
  /** CPU seconds of the watched processes per gigabit carried. */
  cpuPerGbit: number;
  connsPerSec: number;
}

/** One sample from `client` to `target`: iperf3 for `seconds`, then `conns` connections. */
export async function sample(
  client: Netns,
  target: string,
  o: { seconds: number; conns: number; pids: number[] },
): Promise<Sample> {
  const cpu = async () => (await Promise.all(o.pids.map(cpuSeconds))).reduce((a, b) => a + b, 0);
  const cpu0 = await cpu();
  const out = await client.exec('iperf3', ['-c', target, '-t', String(o.seconds), '-J'], {
    timeoutMs: (o.seconds + 30) * 1000,
  });
  const used = (await cpu()) - cpu0;
  const report = JSON.parse(out.stdout) as { end: { sum_received: { bits_per_second: number } } };
  const gbit = report.end.sum_received.bits_per_second / 1e9;
  const conn = await client.exec(process.execPath, ['-e', CONNECT_LOOP, target, String(o.conns)], {
    timeoutMs: 300_000,
  });
  const ms = Number(conn.stdout.trim());
  return { gbit, cpuPerGbit: used / (gbit * o.seconds), connsPerSec: (o.conns / ms) * 1000 };
}

/** A table row: the medians, their spread, and the ratios to the baseline's samples pair by pair. */
export function row(label: string, x: Sample[], base: Sample[], showCpu: boolean): string {
  const col = (k: keyof Sample) => x.map((s) => s[k]);
  const ratio = (k: keyof Sample) => x.map((s, i) => s[k] / base[i]![k]);
  const spread = (k: keyof Sample, digits: number) =>
    `${med(col(k)).toFixed(digits)} (${Math.min(...col(k)).toFixed(digits)}–${Math.max(...col(k)).toFixed(digits)})`;
  return `| ${label} | ${spread('gbit', 2)} | ×${med(ratio('gbit')).toFixed(3)} | ${showCpu ? med(col('cpuPerGbit')).toFixed(2) : '-'} | ${spread('connsPerSec', 0)} | ×${med(ratio('connsPerSec')).toFixed(3)} |`;
}

export const TABLE_HEAD = [
  '| variant | TCP Gbit/s, median (min–max) | ratio to a | Tayga CPU s per Gbit | new TCP connections/s, median (min–max) | ratio to a |',
  '| --- | ---: | ---: | ---: | ---: | ---: |',
];
