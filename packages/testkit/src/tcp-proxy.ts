// A TCP proxy on loopback for fault tests: put it between a client and the API server, then
// freeze it (connections stay open but nothing flows: a silent watch), drop every connection
// (a network error), or refuse new ones (the server is gone).
import { createServer, connect, type Server, type Socket } from 'node:net';

export interface TcpProxy {
  port: number;
  /** Stop forwarding in both directions; connections stay open. */
  freeze(): void;
  /** Forward again (buffered data flows). */
  thaw(): void;
  /** Silence the connections open now for good (open, nothing flows); new ones flow. */
  silenceOpen(): void;
  /** Destroy every open connection (clients see a reset). */
  dropAll(): void;
  /** Refuse (reset) new connections until accept(true). */
  accept(on: boolean): void;
  /** Connections opened so far. */
  readonly connections: number;
  close(): Promise<void>;
}

export async function startTcpProxy(
  targetPort: number,
  targetHost = '127.0.0.1',
): Promise<TcpProxy> {
  const pairs = new Set<[Socket, Socket]>();
  let frozen = false;
  let accepting = true;
  let opened = 0;
  const server: Server = createServer((client) => {
    if (!accepting) {
      client.resetAndDestroy();
      return;
    }
    opened++;
    const upstream = connect(targetPort, targetHost);
    const pair: [Socket, Socket] = [client, upstream];
    pairs.add(pair);
    if (frozen) {
      client.pause();
      upstream.pause();
    }
    client.pipe(upstream);
    upstream.pipe(client);
    const end = () => {
      pairs.delete(pair);
      client.destroy();
      upstream.destroy();
    };
    client.on('error', end).on('close', end);
    upstream.on('error', end).on('close', end);
  });
  const dropAll = () => {
    for (const [a, b] of pairs) {
      a.resetAndDestroy();
      b.destroy();
    }
    pairs.clear();
  };
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  if (!address || typeof address === 'string') throw new Error('proxy has no port');
  return {
    port: address.port,
    freeze() {
      frozen = true;
      for (const [a, b] of pairs) {
        a.pause();
        b.pause();
      }
    },
    silenceOpen() {
      for (const [a, b] of pairs) {
        a.pause();
        b.pause();
        a.unpipe(b);
        b.unpipe(a);
      }
    },
    thaw() {
      frozen = false;
      for (const [a, b] of pairs) {
        a.resume();
        b.resume();
      }
    },
    dropAll,
    accept(on) {
      accepting = on;
    },
    get connections() {
      return opened;
    },
    close() {
      dropAll();
      return new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
