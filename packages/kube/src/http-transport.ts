// The real transport: requests and watch streams against an API server, authenticated by a
// client-node KubeConfig (certificates, tokens, exec plugins) over client-node's own HTTP layer.
//
// Watches deliberately do not use client-node's `Watch` class: it cannot be aborted while it is
// still connecting (its AbortController is only returned once the headers arrived), it silently
// drops lines it cannot parse (a dropped line is a missed event), it swallows exceptions thrown
// by the callback, and it carries its own 30 s inactivity timer. Here every phase is abortable
// through one AbortController, and an unparsable line ends the stream with an error so the cache
// reconnects instead of silently missing an event.
import {
  IsomorphicFetchHttpLibrary,
  RequestContext,
  type KubeConfig,
} from '@kubernetes/client-node';
import { retireConnections, reuseConnections } from './connection-reuse.js';
import { KubeApiError } from './errors.js';
import {
  WatchEventSchema,
  type KubeRequest,
  type KubeTransport,
  type Query,
  type WatchEvent,
  type WatchRequest,
} from './transport.js';

export interface HttpTransportOptions {
  /** Upper bound of one (non-watch) request, in ms (default 30 s). */
  requestTimeoutMs?: number;
  /**
   * One connection pool for every request (default true); client-node alone opens a new TLS
   * connection per request (see connection-reuse.ts).
   */
  reuseConnections?: boolean;
}

export class HttpTransport implements KubeTransport {
  private readonly http = new IsomorphicFetchHttpLibrary();
  private readonly requestTimeoutMs: number;

  constructor(
    private readonly kubeConfig: KubeConfig,
    options: HttpTransportOptions = {},
  ) {
    this.requestTimeoutMs = options.requestTimeoutMs ?? 30_000;
    if (!kubeConfig.getCurrentCluster()) throw new Error('kubeconfig has no current cluster');
    if (options.reuseConnections ?? true) reuseConnections(kubeConfig);
  }

  private async context(
    method: KubeRequest['method'],
    path: string,
    query: Query | undefined,
    signal: AbortSignal,
  ): Promise<RequestContext> {
    const cluster = this.kubeConfig.getCurrentCluster();
    if (!cluster) throw new Error('kubeconfig has no current cluster');
    const url = new URL(cluster.server.replace(/\/+$/, '') + path);
    for (const [k, v] of Object.entries(query ?? {})) {
      if (v !== undefined) url.searchParams.set(k, String(v));
    }
    const ctx = new RequestContext(url.toString(), method);
    ctx.setHeaderParam('Accept', 'application/json');
    ctx.setSignal(signal);
    await this.kubeConfig.applySecurityAuthentication(ctx);
    return ctx;
  }

  async request(req: KubeRequest): Promise<unknown> {
    const timeout = AbortSignal.timeout(this.requestTimeoutMs);
    const signals = [timeout];
    if (req.signal) signals.push(req.signal);
    const ctx = await this.context(req.method, req.path, req.query, AbortSignal.any(signals));
    if (req.body !== undefined) {
      ctx.setHeaderParam('Content-Type', req.contentType ?? 'application/json');
      ctx.setBody(JSON.stringify(req.body));
    }
    const resp = await this.http
      .send(ctx)
      .toPromise()
      .catch((error: unknown) => {
        // No answer in time: the shared connection may be dead; the next request opens another.
        if (timeout.aborted) retireConnections(this.kubeConfig);
        throw error;
      });
    const text = await resp.body.text();
    const body = parseJson(text);
    if (resp.httpStatusCode < 200 || resp.httpStatusCode > 299) {
      throw KubeApiError.fromResponse(
        resp.httpStatusCode,
        body ?? text,
        `${req.method} ${req.path}`,
      );
    }
    if (text && body === undefined) {
      throw new Error(`${req.method} ${req.path}: the answer is not JSON: ${text.slice(0, 200)}`);
    }
    return body;
  }

  watch(
    req: WatchRequest,
    onEvent: (event: WatchEvent) => void,
    onDone: (err?: unknown) => void,
  ): () => void {
    const controller = new AbortController();
    let finished = false;
    const finish = (err?: unknown) => {
      if (finished) return;
      finished = true;
      controller.abort();
      onDone(err);
    };
    const stream = async () => {
      const ctx = await this.context(
        'GET',
        req.path,
        { ...req.query, watch: true },
        controller.signal,
      );
      const resp = await this.http.send(ctx).toPromise();
      if (resp.httpStatusCode !== 200) {
        const text = await resp.body.text();
        throw KubeApiError.fromResponse(
          resp.httpStatusCode,
          parseJson(text) ?? text,
          `watch ${req.path}`,
        );
      }
      const body = resp.body.stream();
      if (!body) throw new Error(`watch ${req.path}: response has no body`);
      const decoder = new TextDecoder();
      let pending = '';
      for await (const chunk of body) {
        if (finished) return;
        pending += decoder.decode(chunk, { stream: true });
        let start = 0;
        for (let nl = pending.indexOf('\n'); nl >= 0; nl = pending.indexOf('\n', start)) {
          const line = pending.slice(start, nl).trim();
          start = nl + 1;
          if (!line) continue;
          const event = WatchEventSchema.parse(JSON.parse(line));
          if (finished) return;
          onEvent(event);
        }
        pending = pending.slice(start);
      }
      if (pending.trim()) throw new Error(`watch ${req.path}: stream ended inside an event`);
      finish();
    };
    stream().catch((err: unknown) => finish(err));
    return () => {
      // Stopped before its stream ended: a cache's watchdog gave up on a silent watch (or the
      // cache stops). The connection may be dead: later requests go to a new one. (Deciding
      // by how long the watch was quiet raced the watchdog's own timer.)
      if (!finished) retireConnections(this.kubeConfig);
      finished = true;
      controller.abort();
    };
  }
}

function parseJson(text: string): unknown {
  if (!text) return undefined;
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return undefined;
  }
}
