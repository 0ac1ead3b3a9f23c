// The flood harness of the datapath benches (hostport-dnat.ts, snat.ts): hostport-flood.py as
// a sender and a sink inside namespaces, driven one line at a time, and the sample it takes:
// the median chunk's rate, the whole loop's rate of what the receiver got, and conntrack's
// entries after it. Not a test.
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { spawn, type ChildProcess } from 'node:child_process';
import { python } from '../testing/python.js';
import type { Netns } from '@flock/testkit';

// From dist/bench/ the script stays in the source tree.
const SCRIPT = fileURLToPath(
  new URL(
    import.meta.url.endsWith('.ts') ? './hostport-flood.py' : '../../bench/hostport-flood.py',
    import.meta.url,
  ),
);

/** A child that answers one line per command. */
export class Lines {
  private readonly queue: string[] = [];
  private waiter: ((line: string) => void) | undefined;
  private stderr = '';

  constructor(private readonly child: ChildProcess) {
    createInterface({ input: child.stdout! }).on('line', (line) => {
      if (this.waiter) {
        const w = this.waiter;
        this.waiter = undefined;
        w(line);
      } else this.queue.push(line);
    });
    child.stderr?.on('data', (d: Buffer) => (this.stderr += d.toString()));
  }

  next(timeoutMs = 60_000): Promise<string> {
    const queued = this.queue.shift();
    if (queued !== undefined) return Promise.resolve(queued);
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        this.waiter = undefined;
        reject(
          new Error(`hostport-flood.py: no answer in ${timeoutMs} ms; stderr: ${this.stderr}`),
        );
      }, timeoutMs);
      this.waiter = (line) => {
        clearTimeout(timer);
        resolve(line);
      };
    });
  }

  async ask(command: string): Promise<string> {
    this.child.stdin!.write(`${command}\n`);
    return this.next();
  }
}

/** The script in `ns`, its stdin a pipe (Netns.spawn gives none); killed on `stop`. */
export async function spawnFlood(
  ns: Netns,
  args: string[],
  children: ChildProcess[],
): Promise<Lines> {
  const child = spawn('ip', ['netns', 'exec', ns.name, await python(), '-S', SCRIPT, ...args], {
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  children.push(child);
  const lines = new Lines(child);
  const first = await lines.next(10_000);
  if (first !== 'ready') throw new Error(`hostport-flood.py ${args[0]}: ${first}`);
  return lines;
}

export const macOf = async (ns: Netns, dev: string): Promise<string> =>
  (
    JSON.parse((await ns.exec('ip', ['-j', 'link', 'show', 'dev', dev])).stdout) as {
      address: string;
    }[]
  )[0]!.address;

export const readNumber = async (ns: Netns, path: string): Promise<number> =>
  Number((await ns.exec('cat', [path])).stdout.trim());

export const med = (xs: number[]): number => {
  const s = [...xs].sort((a, b) => a - b);
  const m = Math.floor(s.length / 2);
  return s.length % 2 ? s[m]! : (s[m - 1]! + s[m]!) / 2;
};
export const spread = (xs: number[], digits: number): string =>
  `${Math.min(...xs).toFixed(digits)}–${Math.max(...xs).toFixed(digits)}`;
export const kilo = (n: number): string => `${(n / 1000).toFixed(1)}k`;

export function option(name: string, fallback: number): number {
  const at = process.argv.indexOf(name);
  return at >= 0 ? Number(process.argv[at + 1]) : fallback;
}

export interface Sample {
  /** Datagrams a second in the sample's median chunk. */
  rate: number;
  /** Datagrams the receiver got per second of the whole send loop. */
  loopRate: number;
  sent: number;
  received: number;
  /** conntrack entries in the node after the sample. */
  entries: number;
}

export type FloodKind = 'new' | 'one';

/** The sender's answer to `send NAME`: frames sent, the loop's seconds, the median chunk's time a frame. */
export interface Sent {
  sent: number;
  seconds: number;
  perFrame: number;
}

/** A sender in `ns` writing frames out of `dev` (its MAC) to `dstMac`, from `src`. */
export async function floodSender(
  ns: Netns,
  o: { dev: string; src: string; dstMac: string; count: number },
  children: ChildProcess[],
): Promise<{
  build: (name: string, rest: string) => Promise<void>;
  send: (name: string) => Promise<Sent>;
}> {
  const lines = await spawnFlood(
    ns,
    [
      'send',
      ...['--dev', o.dev, '--src', o.src, '--count', String(o.count)],
      ...['--src-mac', await macOf(ns, o.dev), '--dst-mac', o.dstMac],
    ],
    children,
  );
  return {
    build: async (name, rest) => {
      const answer = await lines.ask(`build ${name} ${rest}`);
      if (answer !== `built ${name}`) throw new Error(`build ${name}: ${answer}`);
    },
    send: async (name) => {
      const answer = await lines.ask(`send ${name}`);
      const [word, sent, seconds, perFrame] = answer.split(' ');
      if (word !== 'sent') throw new Error(`send ${name}: ${answer}`);
      return { sent: Number(sent), seconds: Number(seconds), perFrame: Number(perFrame) };
    },
  };
}

/**
 * One sample: conntrack flushed in `node`, `send()`, what `receiver` got on `dev` meanwhile and
 * the entries conntrack holds after it.
 */
export async function floodSample(
  node: Netns,
  receiver: { ns: Netns; dev: string },
  send: () => Promise<Sent>,
): Promise<Sample> {
  const rx = () => readNumber(receiver.ns, `/sys/class/net/${receiver.dev}/statistics/rx_packets`);
  await node.exec('conntrack', ['-F'], { okCodes: [0, 1] });
  const before = await rx();
  const { sent, seconds, perFrame } = await send();
  const received = (await rx()) - before;
  const entries = await readNumber(node, '/proc/sys/net/netfilter/nf_conntrack_count');
  return {
    rate: 1 / perFrame,
    loopRate: Math.min(received, sent) / seconds,
    sent,
    received,
    entries,
  };
}
