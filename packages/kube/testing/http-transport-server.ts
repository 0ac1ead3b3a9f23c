// The HTTP transport's tests share these: a local HTTP server that answers like an API server
// (each request recorded, then answered by the handler the test sets), a transport to it, a JSON
// answer, and a watch whose events and end are collected.
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, beforeEach } from 'vitest';
import { HttpTransport } from '../src/transport/http-transport.js';
import type { WatchEvent } from '../src/transport/transport.js';

export type Handler = (req: IncomingMessage, res: ServerResponse, body: string) => void;

/** What the server saw of one request. */
export interface SeenRequest {
  method?: string;
  url?: string;
  auth?: string;
  type?: string;
  body: string;
  port?: number;
}

export interface LocalApiServer {
  /** Answers each request; set by the test. */
  handler: Handler;
  /** Every request of this test, in order of arrival. */
  readonly seen: SeenRequest[];
  /** http://127.0.0.1:port of this test's server. */
  url: string;
  /** A transport to `url` with the token `secret-token` and a 2 s request timeout. */
  transport: HttpTransport;
}

/** Starts a server (and its transport) before each test of the calling file and closes it after. */
export function localApiServer(): LocalApiServer {
  let http: Server | undefined;
  const api: LocalApiServer = {
    handler: () => {
      throw new Error('no handler set');
    },
    seen: [],
    url: '',
    transport: undefined as unknown as HttpTransport,
  };
  beforeEach(async () => {
    api.seen.length = 0;
    const server = createServer((req, res) => {
      let body = '';
      req.on('data', (c: Buffer) => (body += c.toString()));
      req.on('end', () => {
        api.seen.push({
          method: req.method,
          url: req.url,
          auth: req.headers.authorization,
          type: req.headers['content-type'],
          body,
          port: req.socket.remotePort,
        });
        api.handler(req, res, body);
      });
    });
    http = server;
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    api.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    api.transport = new HttpTransport(
      { server: api.url, token: 'secret-token' },
      { requestTimeoutMs: 2000 },
    );
  });
  afterEach(async () => {
    const server = http;
    if (!server) return;
    server.closeAllConnections();
    await new Promise((r) => server.close(r));
  });
  return api;
}

export const json = (res: ServerResponse, code: number, body: unknown) => {
  res.writeHead(code, { 'content-type': 'application/json' });
  res.end(JSON.stringify(body));
};

/** Watches /api/v1/configmaps through `transport`, collecting the events and how it ended. */
export function collect(transport: HttpTransport, query: Record<string, string> = {}) {
  const events: WatchEvent[] = [];
  let done: { err?: unknown } | undefined;
  let finish!: () => void;
  const finished = new Promise<void>((resolve) => (finish = resolve));
  const abort = transport.watch(
    { path: '/api/v1/configmaps', query },
    (e) => events.push(e),
    (err) => {
      done = { err };
      finish();
    },
  );
  return { events, finished, abort, done: () => done };
}
