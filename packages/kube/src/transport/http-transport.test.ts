// The real transport against a local HTTP server that answers like an API server: wire format,
// auth header, content types, error mapping, watch line framing and aborts in every phase.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { eventually } from '@flock/testkit';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { Clock } from '../core/clock.js';
import { KubeApiError } from '../core/errors.js';
import { HttpTransport } from './http-transport.js';
import { resourceListWatch } from '../informer/listwatch-source.js';
import { CONFIGMAPS } from '../core/resource.js';
import type { WatchEvent } from './transport.js';

type Handler = (req: IncomingMessage, res: ServerResponse, body: string) => void;
let handler: Handler;
let http: Server;
let transport: HttpTransport;
const seen: Array<{
  method?: string;
  url?: string;
  auth?: string;
  type?: string;
  body: string;
  port?: number;
}> = [];

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
        port: req.socket.remotePort,
      });
      handler(req, res, body);
    });
  });
  await new Promise<void>((r) => http.listen(0, '127.0.0.1', r));
  transport = new HttpTransport(
    { server: `http://127.0.0.1:${(http.address() as AddressInfo).port}`, token: 'secret-token' },
    { requestTimeoutMs: 2000 },
  );
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
    const arrived = new Set<string>();
    let stream: ServerResponse | undefined;
    handler = (req, res) => {
      arrived.add(req.url ?? '');
      req.socket.on('close', () => closed.push(req.url ?? ''));
      if (req.url?.includes('streaming')) {
        res.writeHead(200);
        res.write('{"type":"ADDED","object":{"metadata":{"name":"a"}}}\n');
        stream = res;
      } // else: never answer (a connect that hangs)
    };
    const hanging = collect({ phase: 'connecting' });
    const streaming = collect({ phase: 'streaming' });
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
    handler = (req, res) => (req.url === '/hang' ? hang.add(res) : json(res, 200, {}));
    const short = new HttpTransport(
      { server: `http://127.0.0.1:${(http.address() as AddressInfo).port}` },
      { requestTimeoutMs: 100 },
    );
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
    handler = (req, res) => {
      if (!req.url?.includes('watch=true')) return json(res, 200, {});
      res.writeHead(200);
      res.write('{"type":"ADDED","object":{"metadata":{"name":"a"}}}\n');
    };
    await transport.request({ method: 'GET', path: '/a' });
    const before = seen[0]?.port;
    const w = collect();
    await eventually('the watch streaming', () => w.events.length === 1);
    w.abort();
    await transport.request({ method: 'GET', path: '/b' });
    expect(seen.at(-1)?.port).not.toBe(before);
    // A watch that the server ended does not retire it: the next request reuses a connection.
    handler = (req, res) => {
      if (!req.url?.includes('watch=true')) return json(res, 200, {});
      res.writeHead(200);
      res.end();
    };
    await collect().finished;
    const known = new Set(seen.slice(1).map((s) => s.port));
    await transport.request({ method: 'GET', path: '/c' });
    expect(known.has(seen.at(-1)?.port)).toBe(true);
  });

  it('times out a request whose answer stops halfway', async () => {
    handler = (_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.write('{"a":');
    };
    const short = new HttpTransport(
      { server: `http://127.0.0.1:${(http.address() as AddressInfo).port}` },
      { requestTimeoutMs: 100 },
    );
    await expect(short.request({ method: 'GET', path: '/x' })).rejects.toThrow(/timeout|abort/i);
  });

  it('reads again once when the connection is reset under a GET (new or reused, before or in the answer); a write is not sent again', async () => {
    let resets = 0;
    const reset = (req: IncomingMessage, res: ServerResponse, midway: boolean) => {
      resets++;
      if (!midway) {
        req.socket.destroy();
        return;
      }
      res.writeHead(200, { 'content-type': 'application/json' });
      res.write('{"a":', () => void req.socket.resetAndDestroy());
    };
    for (const midway of [false, true]) {
      seen.length = 0;
      let first = true;
      handler = (req, res) => {
        if (first) reset(req, res, midway);
        else json(res, 200, { ok: true });
        first = false;
      };
      await expect(transport.request({ method: 'GET', path: '/x' })).resolves.toEqual({ ok: true });
      expect(seen.map((s) => s.method)).toEqual(['GET', 'GET']);
    }
    // Reset again and again: one more try, then the error. The first went out on the kept
    // connection, which the stale-connection retry (http-exchange.ts) sends again on a new one.
    handler = (req, res) => reset(req, res, false);
    seen.length = 0;
    await expect(transport.request({ method: 'GET', path: '/x' })).rejects.toThrow(
      /ECONNRESET|socket hang up/,
    );
    expect(seen).toHaveLength(3);
    seen.length = 0;
    await expect(transport.request({ method: 'POST', path: '/x', body: { a: 1 } })).rejects.toThrow(
      /ECONNRESET|socket hang up/,
    );
    expect(seen).toHaveLength(1);
    expect(resets).toBe(6);
  });

  it('sends no Authorization header without a token', async () => {
    handler = (_req, res) => json(res, 200, {});
    const anonymous = new HttpTransport({
      server: `http://127.0.0.1:${(http.address() as AddressInfo).port}`,
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
      handler = (req, res) =>
        req.headers.authorization === 'Bearer new'
          ? json(res, 200, { ok: true })
          : json(res, 401, { kind: 'Status', code: 401, reason: 'Unauthorized' });
      const t = new HttpTransport({
        server: `http://127.0.0.1:${(http.address() as AddressInfo).port}`,
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
      await expect(transport.request({ method: 'GET', path: '/x' })).rejects.toMatchObject({
        code: 401,
      });
      expect(seen).toHaveLength(1);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('HttpTransport: "try later" answers', () => {
  /** A clock whose waits are recorded and pass at once. */
  const waits: number[] = [];
  const clock: Clock = {
    now: () => Date.now(),
    setTimeout: (fn, ms) => {
      waits.push(ms);
      return setTimeout(fn, 0);
    },
    clearTimeout: (h) => clearTimeout(h as ReturnType<typeof setTimeout>),
  };
  const server = () => `http://127.0.0.1:${(http.address() as AddressInfo).port}`;
  /** Answer each request with the next [code, headers] (then 200). */
  const answer = (...answers: [number, Record<string, string>][]) => {
    handler = (_req, res) => {
      const [code, headers] = answers.shift() ?? [200, {}];
      res.writeHead(code, { 'content-type': 'application/json', ...headers });
      res.end(
        JSON.stringify(
          code === 200 ? { ok: true } : { kind: 'Status', code, message: 'try later' },
        ),
      );
    };
  };
  beforeEach(() => void (waits.length = 0));

  it('sends the request again after the wait a 429 or a 503 with Retry-After asks for', async () => {
    const t = new HttpTransport({ server: server(), token: 't' }, { clock });
    const date = new Date(Date.now() + 3000).toUTCString();
    answer([429, { 'retry-after': '2' }], [503, { 'retry-after': date }], [429, {}]);
    const body = { metadata: { name: 'x' } };
    expect(await t.request({ method: 'POST', path: '/api/v1/configmaps', body })).toEqual({
      ok: true,
    });
    expect(seen.map((r) => [r.method, r.body])).toEqual(
      new Array(4).fill(['POST', '{"metadata":{"name":"x"}}']),
    );
    expect(waits[0]).toBe(2000);
    expect(waits[1]).toBeGreaterThan(1000); // an HTTP date, to the second
    expect(waits[1]).toBeLessThanOrEqual(3000);
    expect(waits[2]).toBe(1000); // no Retry-After: 1 s
  });

  it('is bounded: at most 3 times, 10 s a wait, never past the timeout; a 500 without Retry-After fails at once', async () => {
    const t = new HttpTransport({ server: server() }, { clock, requestTimeoutMs: 30_000 });
    const busy: [number, Record<string, string>] = [429, { 'retry-after': '3600' }];
    answer(busy, busy, busy, busy);
    await expect(t.request({ method: 'GET', path: '/x' })).rejects.toMatchObject({ code: 429 });
    expect(waits).toEqual([10_000, 10_000, 10_000]);
    expect(seen).toHaveLength(4);

    waits.length = 0;
    const short = new HttpTransport({ server: server() }, { clock, requestTimeoutMs: 2000 });
    answer([429, { 'retry-after': '5' }]);
    await expect(short.request({ method: 'GET', path: '/x' })).rejects.toMatchObject({ code: 429 });
    expect(waits).toEqual([]);

    answer([500, {}]);
    await expect(t.request({ method: 'GET', path: '/x' })).rejects.toMatchObject({ code: 500 });
    expect(waits).toEqual([]);
  });

  it('a watch refused with 429 is opened again after the wait', async () => {
    transport = new HttpTransport({ server: server() }, { clock });
    let first = true;
    handler = (_req, res) => {
      if (first) {
        first = false;
        json(res, 429, { kind: 'Status', code: 429 });
        return;
      }
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(`${JSON.stringify({ type: 'ADDED', object: { metadata: { name: 'a' } } })}\n`);
    };
    const w = collect();
    await w.finished;
    expect(w.done()).toEqual({ err: undefined });
    expect(w.events).toHaveLength(1);
    expect(waits).toEqual([1000]);
  });
});
