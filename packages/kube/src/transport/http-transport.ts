// The real transport: requests and watch streams against an API server over node:http(s),
// authenticated from KubeCredentials (client certificates, tokens, token files, exec plugins).
// It does not load @kubernetes/client-node: that library alone costs the agent ≈ 85 MiB of
// resident memory (docs/benchmarks/footprint.md).
//
// Watches are read line by line here, not with client-node's `Watch` class (which cannot be
// aborted while it is still connecting, silently drops lines it cannot parse, swallows
// exceptions thrown by the callback and carries its own 30 s inactivity timer). Every phase is
// abortable through one AbortController, and an unparsable line ends the stream with an error
// so the cache reconnects instead of silently missing an event.
import type { Agent, IncomingMessage } from 'node:http';
import { Authenticator } from './authenticator.js';
import { sleep, systemClock, type Clock } from '../core/clock.js';
import { closePool, SharedPool } from './connection-reuse.js';
import type { KubeCredentials } from './credentials.js';
import { KubeApiError } from '../core/errors.js';
import { createAgent, readText, send } from './http-exchange.js';
import { DEFAULT_RETRY_AFTER, retryAfterMs, type RetryAfterLimits } from './retry-after.js';
import { largeEventCollector } from './large-event-gc.js';
import { LineSplitter } from './line-splitter.js';
import { tlsOptions } from './tls-material.js';
import {
  WatchEventSchema,
  type KubeRequest,
  type KubeTransport,
  type Query,
  type WatchEvent,
  type WatchRequest,
} from './transport.js';

interface HttpTransportOptions {
  /** Upper bound of one (non-watch) request, in ms (default 30 s). */
  requestTimeoutMs?: number;
  /**
   * One connection pool for every request (default true); without it every request opens a
   * connection of its own (see connection-reuse.ts).
   */
  reuseConnections?: boolean;
  /**
   * A 429 (or a 5xx with Retry-After) is sent again after the wait the server asks for, at
   * most `retries` times and `maxWaitMs` per wait (default 3 and 10 s), never past the
   * request's timeout; then it fails with the server's answer.
   */
  retryAfter?: RetryAfterLimits;
  /** Timers of those waits (tests). */
  clock?: Clock;
}

export class HttpTransport implements KubeTransport {
  private readonly requestTimeoutMs: number;
  private readonly server: URL;
  private readonly auth: Authenticator;
  private readonly pool: SharedPool<Agent> | undefined;
  private readonly retryAfter: RetryAfterLimits;
  private readonly clock: Clock;

  constructor(
    private readonly credentials: KubeCredentials,
    options: HttpTransportOptions = {},
  ) {
    this.requestTimeoutMs = options.requestTimeoutMs ?? 30_000;
    this.server = parseServer(credentials);
    this.auth = new Authenticator(credentials);
    this.retryAfter = options.retryAfter ?? DEFAULT_RETRY_AFTER;
    this.clock = options.clock ?? systemClock;
    if (options.reuseConnections ?? true) this.pool = new SharedPool({ close: closePool });
  }

  private url(path: string, query: Query | undefined): URL {
    const url = new URL(this.server.href.replace(/\/+$/, '') + path);
    for (const [k, v] of Object.entries(query ?? {})) {
      if (v !== undefined) url.searchParams.set(k, String(v));
    }
    return url;
  }

  /**
   * Send with credentials; a 401 with a credential that can be refreshed is tried once more,
   * and a "try later" answer (429, or 5xx with Retry-After) again after the wait it asks for
   * (bounded; never past `deadline`). The last answer is the caller's to read.
   */
  private async exchange(
    method: KubeRequest['method'],
    url: URL,
    signal: AbortSignal,
    body?: string,
    contentType?: string,
    deadline = Infinity,
  ): Promise<IncomingMessage> {
    let refreshed = false;
    for (let retries = 0; ;) {
      const res = await this.sendOnce(method, url, signal, body, contentType);
      if (res.statusCode === 401 && !refreshed && this.auth.refresh()) {
        refreshed = true;
        res.resume(); // the refused answer is not needed: free the connection
        continue;
      }
      const now = this.clock.now();
      const wait =
        retries < this.retryAfter.retries
          ? retryAfterMs(
              res.statusCode ?? 0,
              res.headers['retry-after'],
              this.retryAfter.maxWaitMs,
              now,
            )
          : undefined;
      if (wait === undefined || now + wait >= deadline) return res;
      res.resume();
      retries++;
      if (!(await sleep(wait, this.clock, signal))) throw signal.reason;
    }
  }

  private async sendOnce(
    method: KubeRequest['method'],
    url: URL,
    signal: AbortSignal,
    body?: string,
    contentType?: string,
  ): Promise<IncomingMessage> {
    const auth = await this.auth.current();
    const headers: Record<string, string> = { Accept: 'application/json' };
    if (auth.authorization) headers['Authorization'] = auth.authorization;
    if (body !== undefined) headers['Content-Type'] = contentType ?? 'application/json';
    const newAgent = () => createAgent(this.server, tlsOptions(this.credentials, auth.identity));
    const agent = this.pool
      ? this.pool.get(auth.identity?.cert ?? '', newAgent)
      : createAgent(this.server, tlsOptions(this.credentials, auth.identity), false);
    return send({ url, method, headers, body, agent, signal });
  }

  async request(req: KubeRequest): Promise<unknown> {
    const deadline = this.clock.now() + this.requestTimeoutMs;
    const timeout = AbortSignal.timeout(this.requestTimeoutMs);
    const signals = [timeout];
    if (req.signal) signals.push(req.signal);
    const what = `${req.method} ${req.path}`;
    const body = req.body === undefined ? undefined : JSON.stringify(req.body);
    const signal = AbortSignal.any(signals);
    let code: number;
    let text: string;
    for (let attempt = 1; ; attempt++) {
      try {
        const url = this.url(req.path, req.query);
        const resp = await this.exchange(req.method, url, signal, body, req.contentType, deadline);
        code = resp.statusCode ?? 0;
        text = await readText(resp);
        break;
      } catch (error) {
        // No answer in time: the shared connection may be dead; the next request opens another.
        if (timeout.aborted) this.pool?.retire();
        // A read whose connection was reset on the way (the server, a proxy or a load balancer
        // dropped it) is sent once more, as client-go does; a write is not: it may have been done.
        if (req.method === 'GET' && attempt === 1 && !signal.aborted && connectionReset(error))
          continue;
        throw error;
      }
    }
    const parsed = parseJson(text);
    if (code < 200 || code > 299) throw KubeApiError.fromResponse(code, parsed ?? text, what);
    if (text && parsed === undefined) {
      throw new Error(`${what}: the answer is not JSON: ${text.slice(0, 200)}`);
    }
    return parsed;
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
      const url = this.url(req.path, { ...req.query, watch: true });
      const resp = await this.exchange('GET', url, controller.signal);
      if (resp.statusCode !== 200) {
        const text = await readText(resp);
        throw KubeApiError.fromResponse(
          resp.statusCode ?? 0,
          parseJson(text) ?? text,
          `watch ${req.path}`,
        );
      }
      // Lines are cut from the raw bytes and decoded once: appending chunks to a string and
      // searching it for each newline copies a big event (a pod with large annotations) once
      // per chunk, garbage that grows the heap.
      const lines = new LineSplitter();
      for await (const chunk of resp) {
        if (finished) return;
        for (const line of lines.push(chunk as Buffer)) {
          largeEventCollector.noteLine(line.length);
          const event = WatchEventSchema.parse(JSON.parse(line));
          if (finished) return;
          onEvent(event);
        }
      }
      if (lines.rest().trim()) throw new Error(`watch ${req.path}: stream ended inside an event`);
      finish();
    };
    stream().catch((err: unknown) => finish(err));
    return () => {
      // Stopped before its stream ended: a cache's watchdog gave up on a silent watch (or the
      // cache stops). The connection may be dead: later requests go to a new one. (Deciding
      // by how long the watch was quiet raced the watchdog's own timer.)
      if (!finished) this.pool?.retire();
      finished = true;
      controller.abort();
    };
  }
}

function parseServer(credentials: KubeCredentials): URL {
  let url: URL;
  try {
    url = new URL(credentials.server);
  } catch {
    throw new Error(
      `${credentials.source ?? 'credentials'}: server ${credentials.server} is not a URL`,
    );
  }
  if (url.protocol !== 'https:' && url.protocol !== 'http:') {
    throw new Error(
      `${credentials.source ?? 'credentials'}: server ${credentials.server} is not http(s)`,
    );
  }
  return url;
}

function parseJson(text: string): unknown {
  if (!text) return undefined;
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return undefined;
  }
}

/** The connection under a request was reset or closed under it (not a refusal, not a timeout). */
function connectionReset(error: unknown): boolean {
  const code = (error as NodeJS.ErrnoException | undefined)?.code;
  return code === 'ECONNRESET' || code === 'EPIPE';
}
