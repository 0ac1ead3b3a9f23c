// A pod stand-in for the kernel tier, run with `node probe-peer.ts CONFIG` inside a network
// namespace (Node strips the types; only node: imports). It answers TCP and UDP on the given
// ports of each of its addresses with the name owning that address, and sends probes on
// command: JSON lines ({id, op: 'probe'|'seen'|'from', ...}) on a unix socket (paths are not
// namespaced, so the test process outside reaches it), one JSON answer line per command.
import { createServer, connect, type Socket } from 'node:net';
import { createSocket } from 'node:dgram';
import { createInterface } from 'node:readline';

interface Config {
  control: string;
  listen: { name: string; addresses: string[] }[];
  ports: number[];
}

interface Command {
  id: number;
  op: 'probe' | 'seen' | 'from';
  proto?: 'tcp' | 'udp';
  host?: string;
  port?: number;
  localAddress?: string;
  localPort?: number;
  timeoutMs?: number;
  token?: string;
}

const config = JSON.parse(process.argv[2] ?? '{}') as Config;
const seen = new Set<string>();
/** The source address each UDP token came from (what SNAT made of it). */
const sources = new Map<string, string>();

async function listen(): Promise<void> {
  const ready: Promise<void>[] = [];
  for (const { name, addresses } of config.listen) {
    for (const address of addresses) {
      for (const port of config.ports) {
        const tcp = createServer((sock) => {
          sock.on('error', () => undefined);
          sock.end(`${name}\n`);
        });
        ready.push(new Promise((resolve) => tcp.listen({ host: address, port }, resolve)));
        const udp = createSocket(address.includes(':') ? 'udp6' : 'udp4');
        udp.on('message', (msg, rinfo) => {
          seen.add(msg.toString());
          sources.set(msg.toString(), rinfo.address);
          udp.send(name, rinfo.port, rinfo.address);
        });
        ready.push(new Promise((resolve) => udp.bind({ address, port }, resolve)));
      }
    }
  }
  await Promise.all(ready);
}

function probeTcp(c: Command): Promise<object> {
  return new Promise((resolve) => {
    let data = '';
    const sock = connect({
      host: c.host ?? '',
      port: c.port ?? 0,
      localAddress: c.localAddress,
      localPort: c.localPort,
    });
    const done = (result: object) => {
      clearTimeout(timer);
      sock.destroy();
      resolve(result);
    };
    const timer = setTimeout(
      () => done({ id: c.id, ok: false, error: 'timeout' }),
      c.timeoutMs ?? 500,
    );
    sock.on('data', (chunk) => {
      data += chunk.toString();
      if (data.includes('\n')) done({ id: c.id, ok: true, reply: data.trim() });
    });
    sock.on('error', (e: NodeJS.ErrnoException) =>
      done({ id: c.id, ok: false, error: e.code ?? e.message }),
    );
  });
}

function probeUdp(c: Command): Promise<object> {
  return new Promise((resolve) => {
    const sock = createSocket((c.host ?? '').includes(':') ? 'udp6' : 'udp4');
    const done = (result: object) => {
      clearTimeout(timer);
      sock.close();
      resolve(result);
    };
    const timer = setTimeout(
      () => done({ id: c.id, ok: false, error: 'timeout' }),
      c.timeoutMs ?? 500,
    );
    sock.on('message', (msg) => done({ id: c.id, ok: true, reply: msg.toString() }));
    sock.on('error', (e: NodeJS.ErrnoException) =>
      done({ id: c.id, ok: false, error: e.code ?? e.message }),
    );
    sock.bind({ address: c.localAddress, port: c.localPort ?? 0 }, () => {
      sock.send(c.token ?? 'probe', c.port ?? 0, c.host ?? '');
    });
  });
}

async function handle(line: string): Promise<object> {
  const c = JSON.parse(line) as Command;
  if (c.op === 'seen') return { id: c.id, seen: seen.has(c.token ?? '') };
  if (c.op === 'from') return { id: c.id, from: sources.get(c.token ?? '') };
  return c.proto === 'udp' ? probeUdp(c) : probeTcp(c);
}

function serveControl(conn: Socket): void {
  conn.on('error', () => undefined);
  createInterface({ input: conn }).on('line', (line) => {
    handle(line).then(
      (answer) => conn.write(`${JSON.stringify(answer)}\n`),
      (e: unknown) => conn.write(`${JSON.stringify({ error: String(e) })}\n`),
    );
  });
}

await listen();
createServer(serveControl).listen(config.control, () => process.stdout.write('ready\n'));
