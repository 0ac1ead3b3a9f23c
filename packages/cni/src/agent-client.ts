// The plugin's side of the agent socket: one JSON request, half-close, one JSON reply. Every
// way this can fail becomes a CNI error the runtime understands (retry, or not ready).
import { createConnection } from 'node:net';
import { CniErrorCode, describeProblems, type AgentRequest, type AgentResponse } from '@flock/api';
import { parseReply } from './checks.js';
import { CniFailure } from './failure.js';

export interface CallOptions {
  socketPath: string;
  /** The whole exchange: connect, send, agent's work, reply. */
  timeoutMs: number;
  /** Replies larger than this are refused (default 1 MiB). */
  maxReplyBytes?: number;
}

export type CallAgent = (request: AgentRequest, options: CallOptions) => Promise<AgentResponse>;

const UNREACHABLE = new Set(['ENOENT', 'ECONNREFUSED', 'ENOTDIR']);
const DROPPED = new Set(['ECONNRESET', 'EPIPE']);
const DENIED = new Set(['EACCES', 'EPERM']);

/** STATUS asks "can you serve ADD?": any failure to get an answer means no (code 50). */
function failure(request: AgentRequest, code: number, msg: string, details?: string): CniFailure {
  return new CniFailure(
    request.command === 'STATUS' ? CniErrorCode.PluginNotAvailable : code,
    msg,
    details,
  );
}

function connectFailure(request: AgentRequest, path: string, e: NodeJS.ErrnoException) {
  const details = `${e.code ?? 'error'}: ${e.message}`;
  if (e.code && DENIED.has(e.code))
    return failure(
      request,
      CniErrorCode.IoFailure,
      `permission denied connecting to the flock agent at ${path}: the flock CNI plugin must run as root`,
      details,
    );
  if (e.code && UNREACHABLE.has(e.code))
    return failure(
      request,
      CniErrorCode.TryAgainLater,
      `flock agent not reachable at ${path}: is the flock agent running on this node?`,
      details,
    );
  if (e.code && DROPPED.has(e.code))
    return failure(
      request,
      CniErrorCode.TryAgainLater,
      `flock agent at ${path} dropped the connection`,
      details,
    );
  return failure(
    request,
    CniErrorCode.IoFailure,
    `talking to the flock agent at ${path} failed`,
    details,
  );
}

function decodeReply(request: AgentRequest, path: string, raw: string): AgentResponse {
  let json: unknown;
  try {
    json = JSON.parse(raw);
  } catch (e) {
    throw failure(
      request,
      CniErrorCode.IoFailure,
      `undecodable reply from the flock agent at ${path}`,
      (e as Error).message,
    );
  }
  const parsed = parseReply(json);
  if ('problems' in parsed)
    throw failure(
      request,
      CniErrorCode.IoFailure,
      `invalid reply from the flock agent at ${path}`,
      describeProblems(parsed.problems).message,
    );
  return parsed.response;
}

/** Send one request to the agent and return its reply, or throw a CniFailure. */
export const callAgent: CallAgent = (request, options) => {
  const { socketPath, timeoutMs, maxReplyBytes = 1024 * 1024 } = options;
  return new Promise<AgentResponse>((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    let settled = false;
    const socket = createConnection({ path: socketPath });
    const settle = (outcome: () => AgentResponse) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      socket.destroy();
      try {
        resolve(outcome());
      } catch (e) {
        reject(e instanceof Error ? e : new Error(String(e)));
      }
    };
    const fail = (f: CniFailure) =>
      settle(() => {
        throw f;
      });
    const timer = setTimeout(
      () =>
        fail(
          failure(
            request,
            CniErrorCode.TryAgainLater,
            `flock agent at ${socketPath} did not answer within ${timeoutMs} ms`,
          ),
        ),
      timeoutMs,
    );
    socket.on('connect', () => socket.end(JSON.stringify(request)));
    socket.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size > maxReplyBytes)
        return fail(
          failure(
            request,
            CniErrorCode.IoFailure,
            `reply from the flock agent at ${socketPath} exceeds ${maxReplyBytes} bytes`,
          ),
        );
      chunks.push(chunk);
    });
    socket.on('end', () =>
      settle(() => {
        if (size === 0)
          throw failure(
            request,
            CniErrorCode.TryAgainLater,
            `flock agent at ${socketPath} closed the connection without a reply`,
          );
        return decodeReply(request, socketPath, Buffer.concat(chunks).toString('utf8'));
      }),
    );
    socket.on('error', (e: NodeJS.ErrnoException) => fail(connectFailure(request, socketPath, e)));
    socket.on('close', () =>
      fail(
        failure(
          request,
          CniErrorCode.TryAgainLater,
          `flock agent at ${socketPath} closed the connection without a reply`,
        ),
      ),
    );
  });
};
