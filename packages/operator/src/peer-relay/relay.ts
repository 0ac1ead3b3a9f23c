// A peer relay: one watch of every PeerSlice (the operator's), served to agents as record changes
// (peer-log.ts, server.ts). Replicas are independent and stateless: each has its own log and
// epoch, and an agent that moves to another replica receives a snapshot from it. The relay writes
// nothing to the API server but TokenReviews.
import { PeerSlice } from '@flock/api';
import {
  Cache,
  PEERSLICES,
  resourceListWatch,
  type KubeTransport,
  type Logger,
  type MetricsOptions,
} from '@flock/kube';
import { Registry } from 'prom-client';
import { RELAY_METRICS_PREFIX, RelayMetrics } from './metrics.js';
import { PeerLog, sliceRecords, type SliceRecords } from './peer-log.js';
import { RelayServer } from './server.js';
import { reviewToken, tokenAuthenticator, type Authenticate } from './token-review.js';

const SliceRecords = PeerSlice.transform((s): SliceRecords =>
  sliceRecords(s.metadata.name, s.spec.namespace, s.spec.pods),
);

export interface PeerRelayOptions {
  transport: KubeTransport;
  logger: Logger;
  /** Users allowed to read (the agents' service account); ignored with `authenticate`. */
  allowedUsers: readonly string[];
  /** How tokens are checked (default: TokenReview through `transport`). */
  authenticate?: Authenticate;
  tls?: { cert: string; key: string };
  maxLogEvents?: number;
  tickMs?: number;
  /** How long an agent's live changes are gathered before one write (RelayServer). */
  coalesceMs?: number;
  /** Connections one address may hold open (default 16). */
  maxConnectionsPerSource?: number;
  /** Where its metrics go (default: a registry of its own, `registry`). */
  registry?: Registry;
  /** Process metrics (CPU, memory, event loop) in the registry (default true). */
  processMetrics?: boolean;
  watchdogMs?: number;
}

export class PeerRelay {
  readonly log: PeerLog;
  readonly slices: Cache<SliceRecords>;
  readonly server: RelayServer;
  readonly registry: Registry;
  private synced = false;

  constructor(o: PeerRelayOptions) {
    this.log = new PeerLog(o.maxLogEvents);
    this.registry = o.registry ?? new Registry();
    const cacheMetrics: MetricsOptions = { registry: this.registry, prefix: RELAY_METRICS_PREFIX };
    this.slices = new Cache<SliceRecords>({
      source: resourceListWatch(o.transport, PEERSLICES),
      schema: SliceRecords,
      name: 'relay-peerslices',
      pageSize: 50,
      logger: o.logger,
      metrics: cacheMetrics,
      ...(o.watchdogMs ? { watchdogMs: o.watchdogMs } : {}),
    });
    this.slices.addHandler({
      onAdd: (s) => this.log.applySlice(undefined, s),
      onUpdate: (a, b) => this.log.applySlice(a, b),
      onDelete: (s) => this.log.applySlice(s, undefined),
    });
    void this.slices.synced.then(
      () => (this.synced = true),
      () => undefined,
    );
    const metrics = new RelayMetrics(
      this.registry,
      {
        agents: () => this.server.connected,
        records: () => this.log.size,
        changes: () => this.log.seq,
      },
      { processMetrics: o.processMetrics ?? true },
    );
    this.server = new RelayServer({
      log: this.log,
      metrics,
      ready: () => this.synced,
      authenticate:
        o.authenticate ??
        tokenAuthenticator((t) => reviewToken(o.transport, t), { allowed: o.allowedUsers }),
      logger: o.logger,
      ...(o.tls ? { tls: o.tls } : {}),
      ...(o.tickMs ? { tickMs: o.tickMs } : {}),
      ...(o.coalesceMs !== undefined ? { coalesceMs: o.coalesceMs } : {}),
      ...(o.maxConnectionsPerSource !== undefined
        ? { maxConnectionsPerSource: o.maxConnectionsPerSource }
        : {}),
    });
  }

  /** Whether it holds every PeerSlice (ready to serve). */
  get ready(): boolean {
    return this.synced;
  }

  /** Watch the slices and serve; the server answers 503 until their first sync. */
  async start(port: number, host?: string): Promise<number> {
    this.slices.start();
    return this.server.listen(port, host);
  }

  async stop(): Promise<void> {
    await Promise.all([this.server.close(), this.slices.stop()]);
  }
}
