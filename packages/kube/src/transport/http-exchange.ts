// One HTTP(S) exchange over node:http(s) on a given Agent: send, resolve with the response
// whose body the caller reads (a JSON answer or a watch stream). The signal aborts every
// phase, connecting and reading the body included.
import { Agent as HttpAgent, request as httpRequest, type IncomingMessage } from 'node:http';
import { Agent as HttpsAgent, request as httpsRequest } from 'node:https';
import type { TlsOptions } from './tls-material.js';

interface Exchange {
  url: URL;
  method: string;
  headers: Record<string, string>;
  body?: string;
  agent: HttpAgent;
  signal: AbortSignal;
}

/**
 * Idle connections are closed well before the API server's own idle timeout (90 s), so a
 * request rarely races the server closing the connection it picked up.
 */
const FREE_SOCKET_TIMEOUT_MS = 30_000;

/** A pool for `url`'s scheme: keep-alive, the TLS options on every connection it opens. */
export function createAgent(url: URL, tls: TlsOptions, keepAlive = true): HttpAgent {
  const options = { keepAlive, timeout: FREE_SOCKET_TIMEOUT_MS };
  return url.protocol === 'https:'
    ? new HttpsAgent({ ...options, ...tls })
    : new HttpAgent(options);
}

export function send(x: Exchange): Promise<IncomingMessage> {
  return sendOnce(x).catch((err: NodeJS.ErrnoException & { reusedSocket?: boolean }) => {
    // The server closed an idle keep-alive connection just as this request went out on it:
    // the request never reached it, send it once more (on a new connection).
    if (err.reusedSocket && (err.code === 'ECONNRESET' || err.code === 'EPIPE')) return sendOnce(x);
    throw err;
  });
}

function sendOnce(x: Exchange): Promise<IncomingMessage> {
  return new Promise((resolve, reject) => {
    const make = x.url.protocol === 'https:' ? httpsRequest : httpRequest;
    const req = make(x.url, {
      method: x.method,
      headers:
        x.body === undefined
          ? x.headers
          : { ...x.headers, 'Content-Length': String(Buffer.byteLength(x.body)) },
      agent: x.agent,
      signal: x.signal,
    });
    req.on('response', resolve);
    req.on('error', (err: Error & { reusedSocket?: boolean }) => {
      err.reusedSocket = req.reusedSocket;
      reject(err);
    });
    req.end(x.body);
  });
}

/** The whole body as text (rejects when the exchange is aborted or the connection drops). */
export async function readText(res: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of res) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString('utf8');
}
