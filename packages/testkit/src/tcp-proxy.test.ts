import { createServer, connect, type Server } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { startTcpProxy, type TcpProxy } from './tcp-proxy.js';

let echo: Server;
let proxy: TcpProxy;
afterEach(async () => {
  await proxy?.close();
  await new Promise((r) => echo?.close(r));
});

async function setup() {
  echo = createServer((s) => s.pipe(s));
  await new Promise<void>((r) => echo.listen(0, '127.0.0.1', r));
  proxy = await startTcpProxy((echo.address() as { port: number }).port);
}

const roundTrip = (socket: ReturnType<typeof connect>, text: string, timeoutMs = 300) =>
  new Promise<string | undefined>((resolve) => {
    const timer = setTimeout(() => resolve(undefined), timeoutMs);
    socket.once('data', (d) => {
      clearTimeout(timer);
      resolve(d.toString());
    });
    socket.write(text);
  });

describe('TcpProxy', () => {
  it('forwards, freezes without closing, thaws, and drops', async () => {
    await setup();
    const socket = connect(proxy.port, '127.0.0.1');
    await new Promise((r) => socket.once('connect', r));
    expect(await roundTrip(socket, 'a')).toBe('a');
    proxy.freeze();
    expect(await roundTrip(socket, 'b')).toBeUndefined();
    expect(socket.destroyed).toBe(false);
    proxy.thaw();
    expect(await new Promise((r) => socket.once('data', (d) => r(d.toString())))).toBe('b');
    const closed = new Promise((r) => socket.once('close', r));
    socket.on('error', () => undefined);
    proxy.dropAll();
    await closed;
    expect(proxy.connections).toBe(1);
  });

  it('silences the open connections for good while new ones flow', async () => {
    await setup();
    const old = connect(proxy.port, '127.0.0.1');
    await new Promise((r) => old.once('connect', r));
    proxy.silenceOpen();
    const fresh = connect(proxy.port, '127.0.0.1');
    await new Promise((r) => fresh.once('connect', r));
    expect(await roundTrip(fresh, 'new')).toBe('new');
    expect(await roundTrip(old, 'old')).toBeUndefined();
    proxy.thaw();
    expect(await roundTrip(old, 'x')).toBeUndefined();
    expect(old.destroyed).toBe(false);
    old.on('error', () => undefined);
    fresh.on('error', () => undefined);
  });

  it('refuses new connections when told to', async () => {
    await setup();
    proxy.accept(false);
    const socket = connect(proxy.port, '127.0.0.1');
    const outcome = await new Promise((r) => {
      socket.once('error', () => r('error'));
      socket.once('close', () => r('closed'));
    });
    expect(['error', 'closed']).toContain(outcome);
  });
});
