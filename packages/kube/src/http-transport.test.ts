// The real transport against a local HTTP server that answers like an API server: wire format,
// auth header, content types, error mapping, watch line framing and aborts in every phase.
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { KubeConfig } from '@kubernetes/client-node';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { KubeApiError } from './errors.js';
import { HttpTransport } from './http-transport.js';
import { resourceListWatch } from './listwatch-source.js';
import { CONFIGMAPS } from './resource.js';
import type { WatchEvent } from './transport.js';

type Handler = (req: IncomingMessage, res: ServerResponse, body: string) => void;
let handler: Handler;
let http: Server;
let transport: HttpTransport;
const seen: Array<{ method?: string; url?: string; auth?: string; type?: string; body: string }> =
  [];

beforeEach(async () => {
  seen.length = 0;
  http = createServer((req, res) => {
    let body = '';
    req.on('data', (c: Buffer) => (body += c.toString()));
    req.on('end', () => {
      seen.push({
        method: req.method,
        url: req.url,
        auth: req.headers.authorization,
        type: req.headers['content-type'],
        body,
      });
      handler(req, res, body);
    });
  });
  await new Promise<void>((r) => http.listen(0, '127.0.0.1', r));
  const kc = new KubeConfig();
  kc.loadFromOptions({
    clusters: [
      {
        name: 'local',
        server: `http://127.0.0.1:${(http.address() as AddressInfo).port}`,
        skipTLSVerify: true,
      },
    ],
    users: [{ name: 'u', token: 'secret-token' }],
    contexts: [{ name: 'c', cluster: 'local', user: 'u' }],
    currentContext: 'c',
  });
  transport = new HttpTransport(kc, { requestTimeoutMs: 2000 });
});
afterEach(async () => {
  http.closeAllConnections();
  await new Promise((r) => http.close(r));
});

const json = (res: ServerResponse, code: number, body: unknown) => {
  res.writeHead(code, { 'content-type': 'application/json' });
  res.end(JSON.stringify(body));
};

function collect(query: Record<string, string> = {}) {
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

describe('HttpTransport', () => {
  it('sends JSON with the token, the query and the explicit content type', async () => {
    handler = (_req, res) => json(res, 200, { ok: true });
    const out = await transport.request({
      method: 'PATCH',
      path: '/apis/flock.fritzlab.net/v1alpha1/pools/p',
      query: { fieldManager: 'op', force: true, skip: undefined },
      contentType: 'application/apply-patch+yaml',
      body: { a: 1 },
    });
    expect(out).toEqual({ ok: true });
    expect(seen[0]).toMatchObject({
      method: 'PATCH',
      url: '/apis/flock.fritzlab.net/v1alpha1/pools/p?fieldManager=op&force=true',
      auth: 'Bearer secret-token',
      type: 'application/apply-patch+yaml',
      body: '{"a":1}',
    });
  });

  it('turns error answers into KubeApiError with the Status reason', async () => {
    handler = (_req, res) =>
      json(res, 409, {
        kind: 'Status',
        reason: 'Conflict',
        code: 409,
        message: 'the object has been modified',
      });
    const err = await transport
      .request({ method: 'PUT', path: '/x', body: {} })
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(KubeApiError);
    expect(err).toMatchObject({ code: 409, reason: 'Conflict' });
    expect((err as Error).message).toContain('the object has been modified');
    handler = (_req, res) => {
      res.writeHead(200);
      res.end('<html>proxy</html>');
    };
    await expect(transport.request({ method: 'GET', path: '/x' })).rejects.toThrow(/not JSON/);
  });

  it('lists through resourceListWatch, restoring apiVersion/kind on items', async () => {
    handler = (_req, res) =>
      json(res, 200, {
        metadata: { resourceVersion: '7', continue: 'tok' },
        items: [{ metadata: { name: 'a' } }],
      });
    const page = await resourceListWatch(transport, CONFIGMAPS).list({
      limit: 1,
      fieldSelector: 'metadata.name=a',
    });
    expect(page).toEqual({
      items: [{ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'a' } }],
      resourceVersion: '7',
      continue: 'tok',
    });
    expect(seen[0]?.url).toBe('/api/v1/configmaps?limit=1&fieldSelector=metadata.name%3Da');
  });

  it('frames watch events across chunk boundaries and reports a normal close', async () => {
    handler = (_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      const lines = [1, 2, 3]
        .map(
          (i) => JSON.stringify({ type: 'ADDED', object: { metadata: { name: `o${i}` } } }) + '\n',
        )
        .join('');
      res.write(lines.slice(0, 17));
      setTimeout(() => res.write(lines.slice(17, 90)), 5);
      setTimeout(() => res.end(lines.slice(90)), 10);
    };
    const w = collect({ resourceVersion: '5' });
    await w.finished;
    expect(w.events.map((e) => (e.object['metadata'] as { name: string }).name)).toEqual([
      'o1',
      'o2',
      'o3',
    ]);
    expect(w.done()).toEqual({ err: undefined });
    expect(seen[0]?.url).toBe('/api/v1/configmaps?resourceVersion=5&watch=true');
  });

  it('ends a watch with an error on an unparsable line instead of skipping it', async () => {
    handler = (_req, res) => {
      res.writeHead(200);
      res.write('{"type":"ADDED","object":{"metadata":{"name":"a"}}}\n{not json\n');
    };
    const w = collect();
    await w.finished;
    expect(w.events).toHaveLength(1);
    expect(w.done()?.err).toBeInstanceOf(SyntaxError);
  });

  it('reports a watch refused with 410 as a KubeApiError', async () => {
    handler = (_req, res) =>
      json(res, 410, { kind: 'Status', reason: 'Expired', code: 410, message: 'too old' });
    const w = collect();
    await w.finished;
    expect(w.done()?.err).toMatchObject({ code: 410, reason: 'Expired' });
  });

  it('aborts a watch that is still connecting, and one that is streaming: no callbacks after abort', async () => {
    const closed: string[] = [];
    handler = (req, res) => {
      req.socket.on('close', () => closed.push(req.url ?? ''));
      if (req.url?.includes('streaming')) {
        res.writeHead(200);
        res.write('{"type":"ADDED","object":{"metadata":{"name":"a"}}}\n');
        setTimeout(() => res.write('{"type":"ADDED","object":{"metadata":{"name":"late"}}}\n'), 50);
      } // else: never answer (a connect that hangs)
    };
    const hanging = collect({ phase: 'connecting' });
    const streaming = collect({ phase: 'streaming' });
    await new Promise((r) => setTimeout(r, 25));
    hanging.abort();
    streaming.abort();
    await new Promise((r) => setTimeout(r, 75));
    expect(closed.sort()).toEqual([
      '/api/v1/configmaps?phase=connecting&watch=true',
      '/api/v1/configmaps?phase=streaming&watch=true',
    ]);
    expect(streaming.events).toHaveLength(1);
    expect(streaming.done()).toBeUndefined();
    expect(hanging.done()).toBeUndefined();
  });
});
