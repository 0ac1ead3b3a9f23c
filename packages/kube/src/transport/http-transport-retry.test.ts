// The real transport sending a request again: after the wait a "try later" answer (429, 503 with
// Retry-After) asks for, bounded; and a GET whose connection is reset under it, which a write is not.
import type { IncomingMessage, ServerResponse } from 'node:http';
import { beforeEach, describe, expect, it } from 'vitest';
import { collect, json, localApiServer } from '../../testing/http-transport-server.js';
import type { Clock } from '../core/clock.js';
import { HttpTransport } from './http-transport.js';

const api = localApiServer();
const { seen } = api;

describe('HttpTransport: a connection reset under a request', () => {
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
      api.handler = (req, res) => {
        if (first) reset(req, res, midway);
        else json(res, 200, { ok: true });
        first = false;
      };
      await expect(api.transport.request({ method: 'GET', path: '/x' })).resolves.toEqual({
        ok: true,
      });
      expect(seen.map((s) => s.method)).toEqual(['GET', 'GET']);
    }
    // Reset again and again: one more try, then the error. The first went out on the kept
    // connection, which the stale-connection retry (http-exchange.ts) sends again on a new one.
    api.handler = (req, res) => reset(req, res, false);
    seen.length = 0;
    await expect(api.transport.request({ method: 'GET', path: '/x' })).rejects.toThrow(
      /ECONNRESET|socket hang up/,
    );
    expect(seen).toHaveLength(3);
    seen.length = 0;
    await expect(
      api.transport.request({ method: 'POST', path: '/x', body: { a: 1 } }),
    ).rejects.toThrow(/ECONNRESET|socket hang up/);
    expect(seen).toHaveLength(1);
    expect(resets).toBe(6);
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
  /** Answer each request with the next [code, headers] (then 200). */
  const answer = (...answers: [number, Record<string, string>][]) => {
    api.handler = (_req, res) => {
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
    const t = new HttpTransport({ server: api.url, token: 't' }, { clock });
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
    const t = new HttpTransport({ server: api.url }, { clock, requestTimeoutMs: 30_000 });
    const busy: [number, Record<string, string>] = [429, { 'retry-after': '3600' }];
    answer(busy, busy, busy, busy);
    await expect(t.request({ method: 'GET', path: '/x' })).rejects.toMatchObject({ code: 429 });
    expect(waits).toEqual([10_000, 10_000, 10_000]);
    expect(seen).toHaveLength(4);

    waits.length = 0;
    const short = new HttpTransport({ server: api.url }, { clock, requestTimeoutMs: 2000 });
    answer([429, { 'retry-after': '5' }]);
    await expect(short.request({ method: 'GET', path: '/x' })).rejects.toMatchObject({ code: 429 });
    expect(waits).toEqual([]);

    answer([500, {}]);
    await expect(t.request({ method: 'GET', path: '/x' })).rejects.toMatchObject({ code: 500 });
    expect(waits).toEqual([]);
  });

  it('a watch refused with 429 is opened again after the wait', async () => {
    const t = new HttpTransport({ server: api.url }, { clock });
    let first = true;
    api.handler = (_req, res) => {
      if (first) {
        first = false;
        json(res, 429, { kind: 'Status', code: 429 });
        return;
      }
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(`${JSON.stringify({ type: 'ADDED', object: { metadata: { name: 'a' } } })}\n`);
    };
    const w = collect(t);
    await w.finished;
    expect(w.done()).toEqual({ err: undefined });
    expect(w.events).toHaveLength(1);
    expect(waits).toEqual([1000]);
  });
});
