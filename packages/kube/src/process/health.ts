// The health endpoints every flock process serves: /healthz (liveness), /readyz (readiness,
// with named checks like the API server's: /readyz?verbose lists them, /readyz/<name> runs one)
// and /metrics (prom-client).
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Registry } from 'prom-client';
import { errorMessage } from '../core/errors.js';
import type { Logger } from '../core/logger.js';

/** A check passes when it returns true (or nothing); false or a throw fails it (the message is shown). */
type HealthCheck = () => boolean | void | Promise<boolean | void>;

interface HealthServerOptions {
  port: number;
  /** Default: every address of both families (::, or 0.0.0.0 without IPv6); kubelet probes come from the node. */
  host?: string;
  /** Readiness checks by name, served on /readyz. */
  checks?: Record<string, HealthCheck>;
  /** Liveness checks by name, served on /healthz (default: none, i.e. alive while serving). */
  livenessChecks?: Record<string, HealthCheck>;
  /** Served on /metrics; without it /metrics is 404. */
  registry?: Registry;
  /** A check that takes longer fails (default 5 s). */
  checkTimeoutMs?: number;
  logger?: Logger;
}

export interface HealthServer {
  /** The bound port (useful with port 0). */
  port: number;
  close(): Promise<void>;
}

interface CheckResult {
  name: string;
  ok: boolean;
  message?: string;
}

async function runCheck(name: string, check: HealthCheck, timeoutMs: number): Promise<CheckResult> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  try {
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error(`timed out after ${timeoutMs} ms`)), timeoutMs);
    });
    const ok = await Promise.race([Promise.resolve().then(check), timeout]);
    return ok === false ? { name, ok: false, message: 'not ready' } : { name, ok: true };
  } catch (err) {
    return { name, ok: false, message: errorMessage(err) };
  } finally {
    clearTimeout(timer);
  }
}

export async function startHealthServer(options: HealthServerOptions): Promise<HealthServer> {
  const timeoutMs = options.checkTimeoutMs ?? 5_000;
  const groups: Record<string, Record<string, HealthCheck>> = {
    healthz: options.livenessChecks ?? {},
    readyz: options.checks ?? {},
  };

  async function serveChecks(
    res: ServerResponse,
    group: string,
    only: string | undefined,
    verbose: boolean,
  ) {
    const all = groups[group] as Record<string, HealthCheck>;
    const selected =
      only === undefined ? Object.entries(all) : Object.entries(all).filter(([n]) => n === only);
    if (only !== undefined && selected.length === 0)
      return send(res, 404, `no check named ${only}\n`);
    const results = await Promise.all(selected.map(([n, c]) => runCheck(n, c, timeoutMs)));
    const failed = results.filter((r) => !r.ok);
    if (failed.length) {
      options.logger?.warn(`${group} failed`, {
        checks: failed.map((r) => `${r.name}: ${r.message}`),
      });
    }
    const lines = results.map((r) =>
      r.ok ? `[+]${r.name} ok` : `[-]${r.name} failed: ${r.message}`,
    );
    if (failed.length || verbose) {
      const summary = failed.length ? `${group} check failed` : `${group} check passed`;
      return send(res, failed.length ? 503 : 200, `${[...lines, summary].join('\n')}\n`);
    }
    return send(res, 200, 'ok\n');
  }

  async function handle(req: IncomingMessage, res: ServerResponse) {
    const url = new URL(req.url ?? '/', 'http://localhost');
    if (req.method !== 'GET' && req.method !== 'HEAD')
      return send(res, 405, 'method not allowed\n');
    const [, group, name, ...rest] = url.pathname.split('/');
    if ((group === 'healthz' || group === 'readyz') && rest.length === 0) {
      return serveChecks(res, group, name || undefined, url.searchParams.has('verbose'));
    }
    if (url.pathname === '/metrics' && options.registry) {
      const body = await options.registry.metrics();
      res.writeHead(200, { 'content-type': options.registry.contentType });
      return res.end(body);
    }
    return send(res, 404, 'not found\n');
  }

  const server = createServer((req, res) => {
    handle(req, res).catch((err: unknown) => {
      options.logger?.error('health server request failed', { err: errorMessage(err) });
      if (!res.headersSent) send(res, 500, 'internal error\n');
      else res.destroy();
    });
  });
  const listen = (host: string) =>
    new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(options.port, host, () => {
        server.off('error', reject);
        resolve();
      });
    });
  if (options.host !== undefined) await listen(options.host);
  else {
    // Both families by default: on an IPv6-first cluster the kubelet probes the pod's (the
    // node's) IPv6 address. A kernel without IPv6 gets IPv4 only.
    await listen('::').catch(async (e: unknown) => {
      if (!NO_IPV6.has((e as NodeJS.ErrnoException).code ?? '')) throw e;
      await listen('0.0.0.0');
    });
  }
  return {
    port: (server.address() as AddressInfo).port,
    close: () =>
      new Promise<void>((resolve, reject) => {
        server.close((err) => (err ? reject(err) : resolve()));
        server.closeIdleConnections();
      }),
  };
}

/** listen('::') on a kernel without IPv6. */
const NO_IPV6 = new Set(['EAFNOSUPPORT', 'EADDRNOTAVAIL']);

function send(res: ServerResponse, code: number, text: string): void {
  res.writeHead(code, { 'content-type': 'text/plain; charset=utf-8' });
  res.end(text);
}
