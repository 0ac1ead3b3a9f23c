// A KubeTransport (the fake API server) served over real HTTP, for what must go through
// HttpTransport: a benchmark that measures a process's memory while the fake's objects live in
// another process, or a test of the transport itself. Requests map one to one onto
// KubeTransport.request; `?watch=true` streams KubeTransport.watch as JSON lines; an API error
// answers with its code and Status, as a real server does.
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { KubeApiError } from '../src/core/errors.js';
import type { HttpMethod, KubeTransport, Query } from '../src/transport/transport.js';

export interface HttpFront {
  /** http://127.0.0.1:PORT */
  readonly url: string;
  close(): Promise<void>;
}

const METHODS: ReadonlySet<string> = new Set(['GET', 'POST', 'PUT', 'PATCH', 'DELETE']);

/** Serve `api` on 127.0.0.1 (a free port unless one is given). */
export async function serveOverHttp(api: KubeTransport, port = 0): Promise<HttpFront> {
  const server = createServer((req, res) => void handle(api, req, res));
  await new Promise<void>((resolve) => server.listen(port, '127.0.0.1', resolve));
  const { port: bound } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${bound}`,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections(); // open watches would keep it up
        server.close(() => resolve());
      }),
  };
}

async function handle(api: KubeTransport, req: IncomingMessage, res: ServerResponse) {
  const url = new URL(req.url ?? '/', 'http://fake');
  const query: Query = Object.fromEntries(url.searchParams);
  const method = req.method ?? 'GET';
  if (method === 'GET' && (query['watch'] === 'true' || query['watch'] === '1')) {
    delete query['watch'];
    return watch(api, url.pathname, query, req, res);
  }
  try {
    if (!METHODS.has(method)) throw new KubeApiError(405, 'MethodNotAllowed', method);
    const text = await body(req);
    const out = await api.request({
      method: method as HttpMethod,
      path: url.pathname,
      query,
      ...(text ? { body: JSON.parse(text) as unknown } : {}),
      ...(req.headers['content-type'] ? { contentType: req.headers['content-type'] } : {}),
    });
    send(res, 200, out);
  } catch (error) {
    send(res, ...failure(error));
  }
}

function watch(
  api: KubeTransport,
  path: string,
  query: Query,
  req: IncomingMessage,
  res: ServerResponse,
): void {
  res.writeHead(200, { 'Content-Type': 'application/json' });
  const stop = api.watch(
    { path, query },
    (event) => res.write(`${JSON.stringify(event)}\n`),
    (error) => {
      // Headers are gone: a failure is an ERROR event (what a real server sends for a 410).
      if (error !== undefined) {
        const [, status] = failure(error);
        res.write(`${JSON.stringify({ type: 'ERROR', object: status })}\n`);
      }
      res.end();
    },
  );
  req.socket.once('close', stop);
}

function failure(error: unknown): [number, object] {
  const api = error instanceof KubeApiError ? error : undefined;
  const code = api?.code ?? 500;
  const status = api?.status ?? {
    kind: 'Status',
    status: 'Failure',
    code,
    ...(api?.reason ? { reason: api.reason } : {}),
    message: error instanceof Error ? error.message : String(error),
  };
  return [code, status];
}

function send(res: ServerResponse, code: number, out: unknown): void {
  const text = out === undefined ? '' : JSON.stringify(out);
  res.writeHead(code, { 'Content-Type': 'application/json' }).end(text);
}

async function body(req: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString('utf8');
}
