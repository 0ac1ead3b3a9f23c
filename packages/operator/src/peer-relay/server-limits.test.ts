import { connect, type Socket } from 'node:net';
import { RELAY_PATH } from '@flock/api';
import { createMemoryLogger } from '@flock/kube/testing';
import { afterEach, describe, expect, it } from 'vitest';
import { connectionSource } from './connection-limit.js';
import { PeerLog } from './peer-log.js';
import { RelayServer } from './server.js';

let server: RelayServer | undefined;
const sockets: Socket[] = [];
afterEach(async () => {
  for (const s of sockets.splice(0)) s.destroy();
  await server?.close();
  server = undefined;
});

async function start(o: { maxConnectionsPerSource?: number; requestTimeoutMs?: number }) {
  server = new RelayServer({
    log: new PeerLog(),
    ready: () => true,
    authenticate: async (t) => (t === 'good' ? 'allowed' : 'denied'),
    logger: createMemoryLogger(),
    ...o,
  });
  return server.listen(0, '127.0.0.1');
}

/** A raw connection, and when it was closed by the server (ms after it opened; open: undefined). */
async function open(port: number) {
  const socket = connect(port, '127.0.0.1');
  sockets.push(socket);
  await new Promise((resolve, reject) => socket.once('connect', resolve).once('error', reject));
  const t0 = Date.now();
  const state = { closedAfter: undefined as number | undefined, data: '' };
  socket.on('data', (d: Buffer) => (state.data += d.toString()));
  socket.on('error', () => undefined);
  socket.once('close', () => (state.closedAfter = Date.now() - t0));
  return { socket, state };
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe('RelayServer limits', () => {
  it('closes a source’s connections past maxConnectionsPerSource at once, and admits more as they close', async () => {
    const port = await start({ maxConnectionsPerSource: 2 });
    const a = await open(port);
    const b = await open(port);
    const c = await open(port);
    await sleep(300);
    expect(c.state.closedAfter).toBeDefined();
    expect(a.state.closedAfter).toBeUndefined();
    expect(b.state.closedAfter).toBeUndefined();
    a.socket.destroy();
    await sleep(100);
    const d = await open(port);
    await sleep(300);
    expect(d.state.closedAfter).toBeUndefined();
  });

  it('closes a connection that sends no request in time, not a stream that did', async () => {
    const port = await start({ requestTimeoutMs: 300 });
    const idle = await open(port);
    const agent = await open(port);
    agent.socket.write(
      `GET ${RELAY_PATH} HTTP/1.1\r\nhost: relay\r\nauthorization: Bearer good\r\n\r\n`,
    );
    await sleep(2_000);
    expect(idle.state.closedAfter).toBeDefined();
    expect(idle.state.closedAfter).toBeLessThan(1_800);
    expect(agent.state.closedAfter).toBeUndefined();
    expect(agent.state.data).toMatch(/^HTTP\/1\.1 200/);
    expect(agent.state.data).toContain('"t":"synced"');
  });
});

describe('connectionSource', () => {
  it('counts an address as itself, an IPv4-mapped one as its IPv4 address', () => {
    expect(connectionSource('2001:db8:0:7::66')).toBe('2001:db8:0:7::66');
    expect(connectionSource('::ffff:192.0.2.7')).toBe('192.0.2.7');
    expect(connectionSource('192.0.2.7')).toBe('192.0.2.7');
    expect(connectionSource('::ffff:zz')).toBe('::ffff:zz');
  });
});
