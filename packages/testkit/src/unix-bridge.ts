// A loopback TCP port that forwards every connection to a unix socket: how this process reaches
// a server listening in another network namespace (the lab's API server, through the socket
// that `flock-controlplane up --unix-proxy` serves there) without an interface or a route in
// the host's namespace. Unix sockets are files, so they cross network namespaces.
import { connect, createServer, type Socket } from 'node:net';

export interface UnixBridge {
  /** https://127.0.0.1:PORT */
  url: string;
  port: number;
  close(): Promise<void>;
}

export async function startUnixBridge(socketPath: string): Promise<UnixBridge> {
  const open = new Set<Socket>();
  const server = createServer((client) => {
    const upstream = connect(socketPath);
    open.add(client).add(upstream);
    client.pipe(upstream);
    upstream.pipe(client);
    const end = () => {
      open.delete(client);
      open.delete(upstream);
      client.destroy();
      upstream.destroy();
    };
    client.on('error', end).on('close', end);
    upstream.on('error', end).on('close', end);
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen({ host: '127.0.0.1', port: 0 }, resolve);
  });
  const address = server.address();
  if (address === null || typeof address === 'string') throw new Error('bridge: no TCP port');
  return {
    url: `https://127.0.0.1:${address.port}`,
    port: address.port,
    close: () =>
      new Promise((resolve) => {
        for (const s of open) s.destroy();
        server.close(() => resolve());
      }),
  };
}
