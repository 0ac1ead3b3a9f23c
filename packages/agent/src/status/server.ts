// The agent's status socket: HTTP over a unix socket in the CNI socket's root-only directory
// (0700, the socket itself 0600), answering GET /status with the AgentStatus document. Only
// root on the node (or in the agent's container) can ask; nothing listens on the network.
import { chmod, unlink } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import { dirname, join } from 'node:path';
import type { Logger } from '@flock/api';
import { prepareSocketPath } from '../cni-server/socket-path.js';
import type { AgentStatus } from './snapshot.js';

export const STATUS_PATH = '/status';

/** Where the status socket is when --status-socket is not given: beside the CNI socket. */
export function statusSocketPath(config: { socketPath: string; statusSocketPath?: string }) {
  return config.statusSocketPath ?? join(dirname(config.socketPath), 'status.sock');
}

export interface StatusServer {
  socketPath: string;
  close(): Promise<void>;
}

export async function startStatusServer(options: {
  socketPath: string;
  status: () => AgentStatus;
  logger: Logger;
}): Promise<StatusServer> {
  const { socketPath, logger } = options;
  const server: Server = createServer((req, res) => {
    if (req.method !== 'GET' || req.url !== STATUS_PATH) {
      res.writeHead(404, { 'content-type': 'text/plain' }).end('not found\n');
      return;
    }
    try {
      const body = JSON.stringify(options.status());
      res.writeHead(200, { 'content-type': 'application/json' }).end(body);
    } catch (error) {
      logger.error('cannot build the agent status', { error: String(error) });
      res.writeHead(500, { 'content-type': 'text/plain' }).end(`${String(error)}\n`);
    }
  });
  await prepareSocketPath(socketPath, logger);
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(socketPath, () => {
      server.off('error', reject);
      resolve();
    });
  });
  server.on('error', (e) => logger.error('status socket error', { error: e.message }));
  try {
    await chmod(socketPath, 0o600);
  } catch (e) {
    server.close();
    throw e;
  }
  logger.info('status socket listening', { socketPath });
  return {
    socketPath,
    close: async () => {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
      await unlink(socketPath).catch(() => {});
    },
  };
}
