// The test side of sctp-probe.py: SCTP packets crafted on raw sockets, sent from and received in
// network namespaces (the test kernel has no SCTP stack; nftables and conntrack need none).
import type { ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { createInterface } from 'node:readline';
import type { Netns } from '@flock/testkit';
import { python } from './python.js';

// From source (tests) the script is a sibling; from dist (testing/*.js) it stays in the source tree.
const SCRIPT = fileURLToPath(
  new URL(
    import.meta.url.endsWith('.ts') ? './sctp-probe.py' : '../../testing/sctp-probe.py',
    import.meta.url,
  ),
);

export interface SctpSend {
  /** Source address, bound (one of the namespace's own); else the route's source. */
  src?: string;
  dst: string;
  sport: number;
  dport: number;
  /** Carried in a parameter the receiver skips; the listener reports it. No spaces. */
  token?: string;
  /** `init` (default) opens an association; `init-ack` answers one (vtag = its initiate tag). */
  chunk?: 'init' | 'init-ack';
  /** Verification tag of the common header (0 for an INIT). */
  vtag?: number;
  /** The chunk's initiate tag (random and non-zero when left out). */
  initTag?: number;
  /** Send a wrong CRC32c (the kernel's SCTP conntrack marks such a packet invalid). */
  badChecksum?: boolean;
}

/** One SCTP packet as sent, or as a listener saw it (`chunk` 1 = INIT, 2 = INIT ACK). */
export interface SctpPacket {
  family?: 4 | 6;
  src: string;
  dst: string;
  sport: number;
  dport: number;
  vtag: number;
  chunk: number;
  /** The INIT or INIT ACK's initiate tag. */
  tag?: number;
  token: string;
  /** The receiver's check of the CRC32c (listener only). */
  crc?: 'ok' | 'bad';
}

const NUMBERS = new Set(['family', 'sport', 'dport', 'vtag', 'chunk', 'tag']);

/** `key=value key=value …` after the line's first word (values have no spaces). */
function parseFields(line: string): SctpPacket {
  const out: Record<string, string | number> = {};
  for (const field of line.split(' ').slice(1)) {
    const at = field.indexOf('=');
    const key = field.slice(0, at);
    const value = field.slice(at + 1);
    if (NUMBERS.has(key)) {
      if (value !== '') out[key] = Number(value);
    } else out[key] = value;
  }
  return out as unknown as SctpPacket;
}

/** Send one SCTP packet from `ns`; resolves with what was sent (its initiate tag included). */
export async function sendSctp(ns: Netns, p: SctpSend): Promise<SctpPacket> {
  const args = [
    '-S',
    SCRIPT,
    'send',
    '--dst',
    p.dst,
    '--sport',
    String(p.sport),
    '--dport',
    String(p.dport),
    '--chunk',
    p.chunk ?? 'init',
    '--vtag',
    String(p.vtag ?? 0),
  ];
  if (p.src !== undefined) args.push('--src', p.src);
  if (p.token !== undefined) args.push('--token', p.token);
  if (p.initTag !== undefined) args.push('--init-tag', String(p.initTag));
  if (p.badChecksum) args.push('--bad-checksum');
  const { stdout } = await ns.exec(await python(), args);
  const line = stdout.split('\n').find((l) => l.startsWith('sent '));
  if (!line) throw new Error(`sctp-probe send printed no result: ${stdout}`);
  return parseFields(line);
}

/** Every SCTP packet delivered to a namespace (both families), from a raw-socket listener. */
export class SctpListener {
  private readonly packets: SctpPacket[] = [];
  private readonly waiters = new Set<() => void>();

  private constructor(private readonly child: ChildProcess) {}

  static async start(ns: Netns): Promise<SctpListener> {
    const child = ns.spawn(await python(), ['-S', SCRIPT, 'listen']);
    const listener = new SctpListener(child);
    let stderr = '';
    child.stderr?.on('data', (d: Buffer) => (stderr += d.toString()));
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => {
        child.kill('SIGKILL');
        reject(new Error(`sctp listener in ${ns.name} did not start: ${stderr}`));
      }, 10_000);
      child.once('exit', (code) => {
        clearTimeout(timer);
        reject(new Error(`sctp listener in ${ns.name} exited with ${code}: ${stderr}`));
      });
      createInterface({ input: child.stdout! }).on('line', (line) => {
        if (line === 'ready') {
          clearTimeout(timer);
          resolve();
        } else if (line.startsWith('packet ')) {
          listener.packets.push(parseFields(line));
          for (const wake of listener.waiters) wake();
        }
      });
    });
    return listener;
  }

  /**
   * The packet carrying `token`, waiting up to `timeoutMs` for it; undefined if none came.
   * A packet that is dropped never comes, so a negative answer always costs the timeout.
   */
  async seen(token: string, timeoutMs: number): Promise<SctpPacket | undefined> {
    const find = () => this.packets.find((p) => p.token === token);
    const deadline = Date.now() + timeoutMs;
    let found = find();
    while (!found && Date.now() < deadline) {
      await new Promise<void>((resolve) => {
        const wake = () => {
          clearTimeout(timer);
          this.waiters.delete(wake);
          resolve();
        };
        const timer = setTimeout(wake, deadline - Date.now());
        this.waiters.add(wake);
      });
      found = find();
    }
    return found;
  }

  close(): void {
    this.child.kill('SIGKILL');
  }
}
