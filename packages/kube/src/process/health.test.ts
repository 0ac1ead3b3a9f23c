import { Counter, Registry } from 'prom-client';
import { afterEach, describe, expect, it } from 'vitest';
import { startHealthServer, type HealthServer } from './health.js';

let server: HealthServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

async function get(path: string): Promise<{ status: number; body: string; type: string }> {
  const res = await fetch(`http://127.0.0.1:${server?.port}${path}`);
  return {
    status: res.status,
    body: await res.text(),
    type: res.headers.get('content-type') ?? '',
  };
}

describe('health server', () => {
  it('answers on IPv6 and IPv4 when no host is given (an IPv6-first node probes its IPv6 address)', async () => {
    server = await startHealthServer({ port: 0 });
    for (const host of ['127.0.0.1', '[::1]']) {
      const res = await fetch(`http://${host}:${server.port}/healthz`);
      expect(res.status).toBe(200);
    }
  });

  it('serves /healthz, /readyz with named checks, and /metrics', async () => {
    let cacheSynced = false;
    const registry = new Registry();
    new Counter({ name: 'flock_test_total', help: 'x', registers: [registry] }).inc(3);
    server = await startHealthServer({
      port: 0,
      host: '127.0.0.1',
      registry,
      checks: { 'cache-synced': () => cacheSynced, bird: () => undefined },
    });
    expect(await get('/healthz')).toMatchObject({ status: 200, body: 'ok\n' });
    const notReady = await get('/readyz');
    expect(notReady.status).toBe(503);
    expect(notReady.body).toContain('[-]cache-synced failed: not ready');
    expect(notReady.body).toContain('[+]bird ok');
    expect((await get('/readyz/bird')).status).toBe(200);
    expect((await get('/readyz/nope')).status).toBe(404);
    cacheSynced = true;
    expect(await get('/readyz')).toMatchObject({ status: 200, body: 'ok\n' });
    expect((await get('/readyz?verbose')).body).toContain('readyz check passed');
    const metrics = await get('/metrics');
    expect(metrics.body).toContain('flock_test_total 3');
    expect(metrics.type).toContain('text/plain');
    expect((await get('/other')).status).toBe(404);
  });

  it('fails a check that throws or takes too long', async () => {
    server = await startHealthServer({
      port: 0,
      host: '127.0.0.1',
      checkTimeoutMs: 50,
      livenessChecks: {
        loop: () => new Promise(() => {}),
        socket: () => {
          throw new Error('CNI socket gone');
        },
      },
    });
    const r = await get('/healthz');
    expect(r.status).toBe(503);
    expect(r.body).toContain('[-]loop failed: timed out after 50 ms');
    expect(r.body).toContain('[-]socket failed: CNI socket gone');
    expect((await get('/metrics')).status).toBe(404);
  });

  it('close() frees the port', async () => {
    server = await startHealthServer({ port: 0, host: '127.0.0.1' });
    const port = server.port;
    await server.close();
    server = await startHealthServer({ port, host: '127.0.0.1' });
    expect(server.port).toBe(port);
  });
});
