// The peer relay's HTTPS server: one GET of RELAY_PATH a connected agent, answered with the log's
// lines (a snapshot or the changes after the agent's position) and then every change as it is
// logged, each line encoded once for every agent. A snapshot is read from the log as the socket
// drains (peer-log.ts: a relay serving hundreds of agents at once must not hold a copy of 150,000
// records for each); an agent that does not read its live changes fast enough is cut off past
// `maxBufferedBytes` (or once the log moved past what it has yet to read), and resumes from its
// position when it comes back. Live changes are gathered for `coalesceMs` an
// agent and written together: one deflate flush, one TLS record and one write for all of them.
import {
  createServer as createHttpServer,
  type IncomingMessage,
  type Server,
  type ServerResponse,
} from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
import type { AddressInfo, Socket } from 'node:net';
import type { Writable } from 'node:stream';
import { constants, createDeflate } from 'node:zlib';
import { RELAY_PATH, RELAY_TICK_MS, RelayQuery } from '@flock/api';
import type { Logger } from '@flock/kube';
import { ConnectionLimit } from './connection-limit.js';
import { DenialLimit, denialSource } from './denial-limit.js';
import type { RelayMetrics } from './metrics.js';
import { LogOverrun, type PeerLog } from './peer-log.js';
import type { Authenticate } from './token-review.js';

export interface RelayServerOptions {
  log: PeerLog;
  /** Whether the log holds every slice (before the first sync an empty log would be a lie). */
  ready: () => boolean;
  authenticate: Authenticate;
  logger: Logger;
  /** Serving certificate and key (PEM). Without them plain HTTP: tests only. */
  tls?: { cert: string; key: string };
  tickMs?: number;
  /** How long an agent's live changes are gathered before one write (0: each at once). */
  coalesceMs?: number;
  maxClients?: number;
  maxBufferedBytes?: number;
  metrics?: RelayMetrics;
  /** Sources that showed too many denied tokens: no review for them (denial-limit.ts). */
  denials?: DenialLimit;
  /** Connections open at once from one address (connection-limit.ts; default 16). */
  maxConnectionsPerSource?: number;
  /** How long a connection may take to send its request, TLS handshake apart (default 10 s). */
  requestTimeoutMs?: number;
}

interface Client {
  write(chunk: string): void;
}

const SNAPSHOT_CHUNK = 64 * 1024;
/** Live changes gathered this long an agent by default: a few writes per window, not one each. */
export const RELAY_COALESCE_MS = 20;
/** Connections one address may hold open by default (a node's agent needs one). */
export const RELAY_CONNECTIONS_PER_SOURCE = 16;

export class RelayServer {
  private readonly server: Server;
  private readonly clients = new Set<Client>();
  private ticker: NodeJS.Timeout | undefined;
  /** Agents with gathered changes, written when the one coalescing timer fires. */
  private readonly due = new Set<() => void>();
  private dueTimer: NodeJS.Timeout | undefined;
  private readonly denials: DenialLimit;

  constructor(private readonly o: RelayServerOptions) {
    this.denials = o.denials ?? new DenialLimit();
    const handler = (req: IncomingMessage, res: ServerResponse) =>
      void this.handle(req, res).catch((error: unknown) => {
        o.logger.warn('relay request failed', { error: String(error) });
        res.destroy();
      });
    // A GET has no body: its request is its headers, sent at once by an agent. A connection that
    // sends nothing is closed, not kept (the checks run every second of it).
    const timeout = o.requestTimeoutMs ?? 10_000;
    const limits = {
      requestTimeout: timeout,
      headersTimeout: timeout,
      connectionsCheckingInterval: Math.min(1_000, timeout),
    };
    this.server = o.tls
      ? createHttpsServer({ ...o.tls, ...limits, handshakeTimeout: timeout }, handler)
      : createHttpServer(limits, handler);
    const connections = new ConnectionLimit(
      o.maxConnectionsPerSource ?? RELAY_CONNECTIONS_PER_SOURCE,
      () => o.metrics?.refused.inc(),
    );
    this.server.on('connection', (socket: Socket) => void connections.admit(socket));
  }

  get connected(): number {
    return this.clients.size;
  }

  async listen(port: number, host?: string): Promise<number> {
    await new Promise<void>((resolve, reject) => {
      this.server.once('error', reject);
      this.server.listen(port, host, () => resolve());
    });
    this.ticker = setInterval(() => {
      const tick = this.o.log.tick();
      for (const c of this.clients) c.write(tick);
    }, this.o.tickMs ?? RELAY_TICK_MS);
    return (this.server.address() as AddressInfo).port;
  }

  async close(): Promise<void> {
    clearInterval(this.ticker);
    clearTimeout(this.dueTimer);
    this.due.clear();
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  private async handle(req: IncomingMessage, res: ServerResponse) {
    const url = new URL(req.url ?? '/', 'http://relay');
    const answer = (code: number, text: string, headers: Record<string, string> = {}): void =>
      void res.writeHead(code, { 'content-type': 'text/plain', ...headers }).end(`${text}\n`);
    if (req.method !== 'GET') return answer(405, 'method not allowed');
    if (url.pathname === '/healthz')
      return this.o.ready() ? answer(200, 'ok') : answer(503, 'not synced');
    if (url.pathname !== RELAY_PATH) return answer(404, 'not found');
    const auth = /^Bearer (\S+)$/.exec(req.headers.authorization ?? '');
    const source = denialSource(req.socket.remoteAddress ?? '');
    const verdict = auth
      ? await this.o.authenticate(auth[1] as string, () => !this.denials.limited(source))
      : 'denied';
    this.o.metrics?.token(verdict);
    if (verdict === 'limited')
      return answer(429, 'too many denied tokens', { 'retry-after': '10' });
    if (auth && verdict === 'denied') this.denials.denied(source);
    if (verdict === 'busy') return answer(503, 'try later', { 'retry-after': '1' });
    if (verdict === 'denied') return answer(401, 'unauthorized');
    if (!this.o.ready()) return answer(503, 'not synced', { 'retry-after': '1' });
    if (this.clients.size >= (this.o.maxClients ?? 2_000))
      return answer(503, 'too many agents', { 'retry-after': '5' });
    const query = RelayQuery.safeParse(Object.fromEntries(url.searchParams));
    if (!query.success) return answer(400, 'bad query');
    const encodings = String(req.headers['accept-encoding'] ?? '').split(/\s*,\s*/);
    this.stream(res, query.data, encodings.includes('deflate'));
  }

  /** `write` runs once the coalescing window that is open now (or one begun now) ends. */
  private later(write: () => void): void {
    this.due.add(write);
    this.dueTimer ??= setTimeout(() => {
      this.dueTimer = undefined;
      const writes = [...this.due];
      this.due.clear();
      for (const w of writes) w();
    }, this.o.coalesceMs ?? RELAY_COALESCE_MS);
  }

  /**
   * The log's lines from the agent's position, then every change, until it goes away. Deflated
   * when the agent asks (one compressor an agent, a 4 KiB window: ≈ 32 KiB of memory; its lines
   * repeat keys, names and labels, and a change is flushed at once).
   */
  private stream(res: ServerResponse, q: RelayQuery, deflate: boolean): void {
    const maxBuffered = this.o.maxBufferedBytes ?? 16 * 1024 * 1024;
    const z = deflate
      ? createDeflate({ level: 1, windowBits: 12, memLevel: 5, flush: constants.Z_NO_FLUSH })
      : undefined;
    const out: Writable = z ?? res;
    const queued = () => res.writableLength + (z ? z.writableLength + z.readableLength : 0);
    const cutOff = () => {
      if (res.destroyed) return;
      this.o.metrics?.cutOff.inc();
      res.destroy();
    };
    const send = (chunk: string, flush: boolean) => {
      const more = out.write(chunk);
      if (flush) z?.flush(constants.Z_SYNC_FLUSH);
      return more;
    };
    const pending: string[] = [];
    let pendingBytes = 0;
    let live = false;
    const gathered: string[] = [];
    const writeGathered = () => {
      if (res.destroyed) return;
      send(gathered.join(''), true);
      gathered.length = 0;
      this.o.metrics?.writes.inc();
      if (queued() > maxBuffered) cutOff(); // it resumes when it comes back
    };
    const coalesce = (this.o.coalesceMs ?? RELAY_COALESCE_MS) > 0;
    const client: Client = {
      write: (chunk) => {
        if (!live) {
          pending.push(chunk);
          // Changes piling up behind a snapshot it does not read: cut off as a slow reader.
          if ((pendingBytes += chunk.length) > maxBuffered) cutOff();
          return;
        }
        // Lines stay in order: ticks and changes go through the same gathering.
        gathered.push(chunk);
        if (!coalesce) writeGathered();
        else if (gathered.length === 1) this.later(writeGathered);
      },
    };
    // Taken in one turn with the subscription: no change falls between them.
    const off = this.o.log.subscribe((lines) => client.write(lines));
    const resumed = this.o.log.since(q.epoch, q.since);
    const lines = resumed ?? this.o.log.snapshot();
    this.o.metrics?.streams.inc({ start: resumed ? 'resume' : 'snapshot' });
    this.clients.add(client);
    res.on('close', () => {
      off();
      this.clients.delete(client);
      this.due.delete(writeGathered);
      z?.destroy();
    });
    res.writeHead(200, {
      'content-type': 'application/x-ndjson',
      'cache-control': 'no-store',
      ...(z ? { 'content-encoding': 'deflate' } : {}),
    });
    z?.pipe(res);
    let next: IteratorResult<string>;
    const more = () => {
      try {
        next ??= lines.next();
        while (!next.done && !res.destroyed) {
          let chunk = '';
          for (; !next.done && chunk.length < SNAPSHOT_CHUNK; next = lines.next())
            chunk += next.value;
          if (!send(chunk, next.done === true)) return void out.once('drain', more);
        }
      } catch (error) {
        if (!(error instanceof LogOverrun)) throw error;
        return cutOff(); // it read slower than the log moved on: it resumes or starts over
      }
      if (res.destroyed) return;
      live = true;
      for (const chunk of pending.splice(0)) client.write(chunk);
    };
    more();
  }
}
