// The real transport against a local HTTP server that answers like an API server: wire format,
// auth header, content types, error mapping, watch line framing and aborts in every phase.
// Requests sent again (a "try later" answer, a reset connection): http-transport-retry.test.ts.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import type { ServerResponse } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { eventually } from '@flock/testkit';
import { describe, expect, it } from 'vitest';
import { collect, json, localApiServer } from '../../testing/http-transport-server.js';
import { KubeApiError } from '../core/errors.js';
import { HttpTransport } from './http-transport.js';
import { resourceListWatch } from '../informer/listwatch-source.js';
import { CONFIGMAPS } from '../core/resource.js';

const api = localApiServer();
const { seen } = api;

describe('HttpTransport', () => {
  it('sends JSON with the token, the query and the explicit content type', async () => {
    api.handler = (_req, res) => json(res, 200, { ok: true });
    const out = await api.transport.request({
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
    api.handler = (_req, res) =>
      json(res, 409, {
        kind: 'Status',
        reason: 'Conflict',
        code: 409,
        message: 'the object has been modified',
      });
    const err = await api.transport
      .request({ method: 'PUT', path: '/x', body: {} })
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(KubeApiError);
    expect(err).toMatchObject({ code: 409, reason: 'Conflict' });
    expect((err as Error).message).toContain('the object has been modified');
    api.handler = (_req, res) => {
      res.writeHead(200);
      res.end('<html>proxy</html>');
    };
    await expect(api.transport.request({ method: 'GET', path: '/x' })).rejects.toThrow(/not JSON/);
  });

  it('lists through resourceListWatch, restoring apiVersion/kind on items', async () => {
    api.handler = (_req, res) =>
      json(res, 200, {
        metadata: { resourceVersion: '7', continue: 'tok' },
        items: [{ metadata: { name: 'a' } }],
      });
    const page = await resourceListWatch(api.transport, CONFIGMAPS).list({
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
    api.handler = (_req, res) => {
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
    const w = collect(api.transport, { resourceVersion: '5' });
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
    api.handler = (_req, res) => {
      res.writeHead(200);
      res.write('{"type":"ADDED","object":{"metadata":{"name":"a"}}}\n{not json\n');
    };
    const w = collect(api.transport);
    await w.finished;
    expect(w.events).toHaveLength(1);
    expect(w.done()?.err).toBeInstanceOf(SyntaxError);
  });

  it('reports a watch refused with 410 as a KubeApiError', async () => {
    api.handler = (_req, res) =>
      json(res, 410, { kind: 'Status', reason: 'Expired', code: 410, message: 'too old' });
    const w = collect(api.transport);
    await w.finished;
    expect(w.done()?.err).toMatchObject({ code: 410, reason: 'Expired' });
  });

  it('aborts a watch that is still connecting, and one that is streaming: no callbacks after abort', async () => {
    const closed: string[] = [];
    const arrived = new Set<string>();
    let stream: ServerResponse | undefined;
    api.handler = (req, res) => {
      arrived.add(req.url ?? '');
      req.socket.on('close', () => closed.push(req.url ?? ''));
      if (req.url?.includes('streaming')) {
        res.writeHead(200);
        res.write('{"type":"ADDED","object":{"metadata":{"name":"a"}}}\n');
        stream = res;
      } // else: never answer (a connect that hangs)
    };
    const hanging = collect(api.transport, { phase: 'connecting' });
    const streaming = collect(api.transport, { phase: 'streaming' });
    await eventually(
      'both watches at the server, the first event received',
      () => arrived.size === 2 && streaming.events.length === 1,
    );
    // An event already on its way when the watch is aborted is never delivered.
    stream?.write('{"type":"ADDED","object":{"metadata":{"name":"late"}}}\n');
    hanging.abort();
    streaming.abort();
    await eventually('both connections closed', () => closed.length === 2);
    expect(closed.sort()).toEqual([
      '/api/v1/configmaps?phase=connecting&watch=true',
      '/api/v1/configmaps?phase=streaming&watch=true',
    ]);
    await new Promise((r) => setTimeout(r, 50));
    expect(streaming.events).toHaveLength(1);
    expect(streaming.done()).toBeUndefined();
    expect(hanging.done()).toBeUndefined();
  });

  it('reuses one connection, and retires it when a request times out', async () => {
    const hang = new Set<ServerResponse>();
    api.handler = (req, res) => (req.url === '/hang' ? hang.add(res) : json(res, 200, {}));
    const short = new HttpTransport({ server: api.url }, { requestTimeoutMs: 100 });
    await Promise.all([1, 2].map(() => short.request({ method: 'GET', path: '/a' })));
    await short.request({ method: 'GET', path: '/b' });
    const idle = new Set(seen.map((s) => s.port));
    expect(idle.size).toBe(2);
    expect(idle.has(seen[2]?.port)).toBe(true); // an idle connection was reused
    await expect(short.request({ method: 'GET', path: '/hang' })).rejects.toThrow(/timeout|abort/i);
    // The pool may sit on a dead connection: the next request opens a new one, although one
    // of the old ones is still idle.
    await short.request({ method: 'GET', path: '/c' });
    expect(idle.has(seen.at(-1)?.port)).toBe(false);
    for (const res of hang) res.end();
  });

  it('retires the connection pool when a watch is stopped before its stream ended', async () => {
    api.handler = (req, res) => {
      if (!req.url?.includes('watch=true')) return json(res, 200, {});
      res.writeHead(200);
      res.write('{"type":"ADDED","object":{"metadata":{"name":"a"}}}\n');
    };
    await api.transport.request({ method: 'GET', path: '/a' });
    const before = seen[0]?.port;
    const w = collect(api.transport);
    await eventually('the watch streaming', () => w.events.length === 1);
    w.abort();
    await api.transport.request({ method: 'GET', path: '/b' });
    expect(seen.at(-1)?.port).not.toBe(before);
    // A watch that the server ended does not retire it: the next request reuses a connection.
    api.handler = (req, res) => {
      if (!req.url?.includes('watch=true')) return json(res, 200, {});
      res.writeHead(200);
      res.end();
    };
    await collect(api.transport).finished;
    const known = new Set(seen.slice(1).map((s) => s.port));
    await api.transport.request({ method: 'GET', path: '/c' });
    expect(known.has(seen.at(-1)?.port)).toBe(true);
  });

  it('times out a request whose answer stops halfway', async () => {
    api.handler = (_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.write('{"a":');
    };
    const short = new HttpTransport({ server: api.url }, { requestTimeoutMs: 100 });
    await expect(short.request({ method: 'GET', path: '/x' })).rejects.toThrow(/timeout|abort/i);
  });

  it('sends no Authorization header without a token', async () => {
    api.handler = (_req, res) => json(res, 200, {});
    const anonymous = new HttpTransport({
      server: api.url,
    });
    await anonymous.request({ method: 'GET', path: '/x' });
    expect(seen[0]?.auth).toBeUndefined();
    expect(() => new HttpTransport({ server: 'ftp://x' })).toThrow(/is not http\(s\)/);
    expect(() => new HttpTransport({ server: 'x', source: 'f' })).toThrow(
      'f: server x is not a URL',
    );
  });

  it('reads a rotated token file again after a 401, and tries once more', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'flock-transport-'));
    try {
      const file = join(dir, 'token');
      writeFileSync(file, 'old');
      api.handler = (req, res) =>
        req.headers.authorization === 'Bearer new'
          ? json(res, 200, { ok: true })
          : json(res, 401, { kind: 'Status', code: 401, reason: 'Unauthorized' });
      const t = new HttpTransport({
        server: api.url,
        tokenFile: file,
      });
      await expect(t.request({ method: 'GET', path: '/x' })).rejects.toMatchObject({ code: 401 });
      expect(seen.map((s) => s.auth)).toEqual(['Bearer old', 'Bearer old']); // retried once
      writeFileSync(file, 'new'); // the kubelet rotated the bound token
      seen.length = 0;
      // Still cached (read < 1 min ago): the 401 makes it read the file again.
      await expect(t.request({ method: 'PUT', path: '/x', body: { a: 1 } })).resolves.toEqual({
        ok: true,
      });
      expect(seen.map((s) => [s.auth, s.body])).toEqual([
        ['Bearer old', '{"a":1}'],
        ['Bearer new', '{"a":1}'],
      ]);
      // A static token cannot get better: no retry.
      seen.length = 0;
      await expect(api.transport.request({ method: 'GET', path: '/x' })).rejects.toMatchObject({
        code: 401,
      });
      expect(seen).toHaveLength(1);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
