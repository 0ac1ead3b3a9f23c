// The test side of probe-peer.ts: start it inside a namespace and talk to it over its unix
// control socket (JSON lines, answers matched by id).
import { existsSync, rmSync } from 'node:fs';
import { connect, type Socket } from 'node:net';
import { fileURLToPath } from 'node:url';
import { createInterface } from 'node:readline';
import type { Netns } from '@flock/testkit';

// From source (tests) Node runs the .ts itself; from dist (the bench) the compiled .js.
const PEER_SCRIPT = fileURLToPath(
  new URL(import.meta.url.endsWith('.ts') ? './probe-peer.ts' : './probe-peer.js', import.meta.url),
);

export interface ProbeCommand {
  proto: 'tcp' | 'udp';
  host: string;
  port: number;
  localAddress?: string;
  localPort?: number;
  timeoutMs?: number;
  token?: string;
}

export interface ProbeAnswer {
  ok: boolean;
  reply?: string;
  error?: string;
}

export class PeerClient {
  private nextId = 1;
  private readonly waiting = new Map<number, (answer: Record<string, unknown>) => void>();

  private constructor(
    private readonly socket: Socket,
    private readonly path: string,
  ) {
    createInterface({ input: socket }).on('line', (line) => {
      const answer = JSON.parse(line) as Record<string, unknown>;
      const id = answer['id'];
      if (typeof id !== 'number') return;
      this.waiting.get(id)?.(answer);
      this.waiting.delete(id);
    });
  }

  /** Start a peer answering on `ports` of each listed address, and connect to it. */
  static async start(
    ns: Netns,
    listen: { name: string; addresses: string[] }[],
    ports: number[],
  ): Promise<PeerClient> {
    const control = `/tmp/flock-netpol-${ns.name}.sock`;
    rmSync(control, { force: true });
    const child = ns.spawn(process.execPath, [
      PEER_SCRIPT,
      JSON.stringify({ control, listen, ports }),
    ]);
    let stderr = '';
    child.stderr?.on('data', (d: Buffer) => (stderr += d.toString()));
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(
        () => reject(new Error(`probe peer in ${ns.name} did not start: ${stderr}`)),
        20_000,
      );
      child.stdout?.on('data', (d: Buffer) => {
        if (d.toString().includes('ready')) {
          clearTimeout(timer);
          resolve();
        }
      });
      child.on('exit', (code) => {
        clearTimeout(timer);
        reject(new Error(`probe peer in ${ns.name} exited with ${code}: ${stderr}`));
      });
    });
    const socket = connect(control);
    await new Promise<void>((resolve, reject) =>
      socket.once('connect', resolve).once('error', reject),
    );
    return new PeerClient(socket, control);
  }

  private request(cmd: Record<string, unknown>): Promise<Record<string, unknown>> {
    const id = this.nextId++;
    return new Promise((resolve) => {
      this.waiting.set(id, resolve);
      this.socket.write(`${JSON.stringify({ ...cmd, id })}\n`);
    });
  }

  async probe(cmd: ProbeCommand): Promise<ProbeAnswer> {
    const a = await this.request({ op: 'probe', ...cmd });
    return {
      ok: a['ok'] === true,
      ...(typeof a['reply'] === 'string' ? { reply: a['reply'] } : {}),
      ...(typeof a['error'] === 'string' ? { error: a['error'] } : {}),
    };
  }

  /** Did this peer receive a UDP datagram carrying `token`? */
  async seen(token: string): Promise<boolean> {
    return (await this.request({ op: 'seen', token }))['seen'] === true;
  }

  /** The source address of the UDP datagram carrying `token`, as this peer saw it. */
  async sourceOf(token: string): Promise<string | undefined> {
    const from = (await this.request({ op: 'from', token }))['from'];
    return typeof from === 'string' ? from : undefined;
  }

  close(): void {
    this.socket.destroy();
    if (existsSync(this.path)) rmSync(this.path, { force: true });
  }
}
