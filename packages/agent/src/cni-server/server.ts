// The agent's CNI socket: one JSON AgentRequest per connection (the client half-closes after
// it), one JSON AgentResponse back, then close. Every request is validated; a bad, slow,
// oversized or vanishing client gets a CNI error object (or nothing) and never hurts the agent.
import { chmod, unlink } from 'node:fs/promises';
import { createServer, type Server, type Socket } from 'node:net';
import {
  AgentResponse,
  CniErrorCode,
  describeIssues,
  describeProblems,
  parseAgentRequest,
  silentLogger,
  type AgentRequest,
  type Logger,
} from '@flock/api';
import { prepareSocketPath } from './socket-path.js';

export type CniHandler = (request: AgentRequest) => Promise<AgentResponse>;

interface CniServerOptions {
  socketPath: string;
  /** The agent's ADD/DEL/CHECK/STATUS/GC logic; called only with validated requests. */
  handle: CniHandler;
  logger?: Logger;
  /** Largest request accepted (default 1 MiB: GC lists every attachment of the node). */
  maxRequestBytes?: number;
  /** Time a client has to send its whole request (default 10 s); the handler is not bounded here. */
  requestTimeoutMs?: number;
  /** Connections served at once; more are closed at once and the plugin retries (default 128). */
  maxConnections?: number;
  /** How long close() lets requests in progress finish before cutting them (default 5 s). */
  closeGraceMs?: number;
}

export interface CniServer {
  readonly socketPath: string;
  /** Stop accepting, let requests in progress finish (within the grace), remove the socket. */
  close(): Promise<void>;
}

const failure = (code: number, msg: string, details?: string): AgentResponse => ({
  ok: false,
  error: details ? { code, msg, details } : { code, msg },
});

/** Request fields that come from CNI_* variables in the plugin (code 4, as the spec says). */
const ENV_FIELDS = new Set(['containerID', 'netns', 'ifName', 'args']);

/** Decode and validate one request; undefined request means `response` says why not. */
function decodeRequest(raw: string): { request: AgentRequest } | { response: AgentResponse } {
  let json: unknown;
  try {
    json = JSON.parse(raw);
  } catch (e) {
    return {
      response: failure(
        CniErrorCode.DecodeFailure,
        'request is not valid JSON',
        (e as Error).message,
      ),
    };
  }
  const parsed = parseAgentRequest(json);
  if (parsed.success) return { request: parsed.data };
  const problems = parsed.problems;
  const env = problems.filter((p) => ENV_FIELDS.has(String(p.path[0])));
  const config = problems.filter((p) => p.path[0] === 'config');
  const [code, shown] =
    env.length > 0
      ? [CniErrorCode.InvalidEnvironment, env]
      : config.length > 0 && config.length === problems.length
        ? [CniErrorCode.InvalidNetworkConfig, config]
        : [CniErrorCode.DecodeFailure, problems];
  return { response: failure(code, `invalid request: ${describeProblems(shown).message}`) };
}

export async function startCniServer(options: CniServerOptions): Promise<CniServer> {
  const {
    socketPath,
    handle,
    logger = silentLogger,
    maxRequestBytes = 1024 * 1024,
    requestTimeoutMs = 10_000,
    maxConnections = 128,
    closeGraceMs = 5000,
  } = options;
  const open = new Set<Socket>();

  async function answer(raw: string): Promise<AgentResponse> {
    const decoded = decodeRequest(raw);
    if ('response' in decoded) {
      logger.warn('invalid CNI request', { error: decoded.response });
      return decoded.response;
    }
    const { request } = decoded;
    const started = performance.now();
    try {
      const response = AgentResponse.safeParse(await handle(request));
      if (!response.success) {
        const why = describeIssues(response.error.issues).message;
        logger.error('CNI handler returned an invalid response', { command: request.command, why });
        return failure(CniErrorCode.Internal, 'flock agent produced an invalid response', why);
      }
      logger.debug('CNI request served', {
        command: request.command,
        containerID: request.containerID,
        ok: response.data.ok,
        ms: Math.round(performance.now() - started),
      });
      return response.data;
    } catch (e) {
      logger.error('CNI handler failed', {
        command: request.command,
        containerID: request.containerID,
        error: (e as Error).message,
      });
      return failure(CniErrorCode.Internal, `flock agent failed: ${(e as Error).message}`);
    }
  }

  function serve(socket: Socket): void {
    open.add(socket);
    const chunks: Buffer[] = [];
    let size = 0;
    let state: 'reading' | 'answering' | 'done' = 'reading';
    let lingerTimer: NodeJS.Timeout | undefined;
    // A client that never half-closes must not hold the connection forever.
    const readTimer = setTimeout(() => {
      if (state !== 'reading') return;
      logger.warn('CNI client did not send its request in time', { requestTimeoutMs });
      reply(failure(CniErrorCode.IoFailure, `request not received within ${requestTimeoutMs} ms`));
    }, requestTimeoutMs);
    function reply(response: AgentResponse): void {
      state = 'done';
      clearTimeout(readTimer);
      if (!socket.writable) return; // the client left; nobody to tell
      socket.end(JSON.stringify(response));
      // Nor must one that keeps sending or never reads the reply.
      lingerTimer = setTimeout(() => socket.destroy(), 1000);
    }
    socket.on('error', (e) => logger.debug('CNI connection error', { error: e.message }));
    socket.on('close', () => {
      open.delete(socket);
      clearTimeout(readTimer);
      clearTimeout(lingerTimer);
    });
    socket.on('data', (chunk: Buffer) => {
      if (state !== 'reading') return;
      size += chunk.length;
      if (size > maxRequestBytes) {
        logger.warn('CNI request too large', { maxRequestBytes });
        reply(failure(CniErrorCode.IoFailure, `request exceeds ${maxRequestBytes} bytes`));
        return;
      }
      chunks.push(chunk);
    });
    socket.on('end', () => {
      if (state !== 'reading') return;
      state = 'answering';
      clearTimeout(readTimer);
      void answer(Buffer.concat(chunks).toString('utf8')).then(reply, (e: unknown) =>
        reply(failure(CniErrorCode.Internal, `flock agent failed: ${String(e)}`)),
      );
    });
  }

  await prepareSocketPath(socketPath, logger);
  const server: Server = createServer({ allowHalfOpen: true }, serve);
  server.maxConnections = maxConnections;
  server.on('error', (e) => logger.error('CNI socket server error', { error: e.message }));
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(socketPath, () => {
      server.off('error', reject);
      resolve();
    });
  });
  try {
    await chmod(socketPath, 0o600);
  } catch (e) {
    server.close();
    throw e;
  }
  logger.info('CNI socket listening', { socketPath });

  return {
    socketPath,
    close: async () => {
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      // A handler that hangs must not hang the agent's shutdown: cut what is left after the grace.
      const grace = setTimeout(() => {
        if (open.size > 0)
          logger.warn('cutting CNI requests still in progress', { count: open.size });
        for (const socket of open) socket.destroy();
      }, closeGraceMs);
      await closed;
      clearTimeout(grace);
      await unlink(socketPath).catch(() => {}); // libuv usually removed it already
      logger.info('CNI socket closed', { socketPath });
    },
  };
}
