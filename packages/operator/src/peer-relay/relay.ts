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
import { PeerLog, type SliceRecords } from './peer-log.js';
import { RelayServer } from './server.js';
import { reviewToken, tokenAuthenticator, type Authenticate } from './token-review.js';

const SliceRecords = PeerSlice.transform((s): SliceRecords => ({
  metadata: { name: s.metadata.name },
  spec: s.spec,
}));

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
  metrics?: MetricsOptions;
  watchdogMs?: number;
}

export class PeerRelay {
  readonly log: PeerLog;
  readonly slices: Cache<SliceRecords>;
  readonly server: RelayServer;
  private synced = false;

  constructor(o: PeerRelayOptions) {
    this.log = new PeerLog(o.maxLogEvents);
    this.slices = new Cache<SliceRecords>({
      source: resourceListWatch(o.transport, PEERSLICES),
      schema: SliceRecords,
      name: 'relay-peerslices',
      pageSize: 50,
      logger: o.logger,
      ...(o.metrics ? { metrics: o.metrics } : {}),
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
    this.server = new RelayServer({
      log: this.log,
      ready: () => this.synced,
      authenticate:
        o.authenticate ??
        tokenAuthenticator((t) => reviewToken(o.transport, t), { allowed: o.allowedUsers }),
      logger: o.logger,
      ...(o.tls ? { tls: o.tls } : {}),
      ...(o.tickMs ? { tickMs: o.tickMs } : {}),
    });
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
