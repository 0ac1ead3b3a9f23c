// Peers from a peer relay: the relay Service's ready endpoints (its EndpointSlices, watched in
// its namespace: no DNS, no Service address, which the node may not route yet), one stream at a
// time to one of them (chosen by this node's name, so agents spread over the replicas), records
// into RemotePeers. A full snapshot replaces the peers whole once it is complete; until then the
// peers stay as they were. The owner (SlicePeers) is told when the relay has given a complete
// state and when it lost it, and watches the PeerSlices itself while the relay is away.
import { readFileSync } from 'node:fs';
import { createHash } from 'node:crypto';
import {
  EndpointSlice,
  RELAY_PORT,
  SERVICE_NAME_LABEL,
  endpointReady,
  podOfPeer,
  type Logger,
  type PeerPod,
  type Pod,
} from '@flock/api';
import {
  Cache,
  ENDPOINT_SLICES,
  resourceListWatch,
  type KubeTransport,
  type MetricsOptions,
} from '@flock/kube';
import { trimPod } from '../node/pod-trim.js';
import { httpsRelay, RelayStream, type RelayOpen, type RelayTarget } from './relay-client.js';
import type { RemotePeers } from './remote-peers.js';

export interface PeerRelayConfig {
  /** The relay's Service. */
  namespace: string;
  service: string;
  /** The CA that signed the relays' certificate (PEM file). */
  caFile: string;
  /** This agent's service account token (read again at every connection: it rotates). */
  tokenFile: string;
}

export interface RelayPeersOptions {
  relay: PeerRelayConfig;
  transport: KubeTransport;
  logger: Logger;
  nodeName: string;
  metrics?: MetricsOptions;
  watchdogMs?: number;
  /** How a target is reached (default HTTPS; tests and the fan-out bench count bytes). */
  open?: (target: RelayTarget) => RelayOpen;
  tickMs?: number;
}

/** What the owner hears: the relay's state is complete, or it is gone. */
export interface RelayEvents {
  synced(): void;
  lost(): void;
}

interface RelayEndpoints {
  metadata: { name: string; namespace: string; resourceVersion?: string };
  hosts: string[];
  port: number;
}

const RelayEndpoints = EndpointSlice.transform((s): RelayEndpoints => ({
  metadata: {
    name: s.metadata.name,
    namespace: s.metadata.namespace,
    ...(s.metadata.resourceVersion ? { resourceVersion: s.metadata.resourceVersion } : {}),
  },
  hosts: (s.endpoints ?? []).filter(endpointReady).flatMap((e) => e.addresses ?? []),
  port: (s as { ports?: { port?: number }[] }).ports?.find((p) => p.port)?.port ?? RELAY_PORT,
}));

const sleep = (ms: number, signal: AbortSignal) =>
  new Promise<void>((resolve) => {
    const t = setTimeout(resolve, ms);
    signal.addEventListener('abort', () => (clearTimeout(t), resolve()), { once: true });
  });

export class RelayPeers {
  readonly endpoints: Cache<RelayEndpoints>;
  private readonly stream: RelayStream;
  private readonly abort = new AbortController();
  /** A snapshot being received: its pods, until `synced`. */
  private collecting: Pod[] | undefined;
  private target: string | undefined;
  private running: Promise<void> | undefined;
  /** The current stream has delivered a complete state. */
  private streamSynced = false;

  constructor(
    private readonly o: RelayPeersOptions,
    private readonly remote: RemotePeers,
    private readonly events: RelayEvents,
  ) {
    this.endpoints = new Cache<RelayEndpoints>({
      source: resourceListWatch(o.transport, ENDPOINT_SLICES, { namespace: o.relay.namespace }),
      schema: RelayEndpoints,
      name: 'peer-relay-endpoints',
      labelSelector: `${SERVICE_NAME_LABEL}=${o.relay.service}`,
      logger: o.logger,
      ...(o.metrics ? { metrics: o.metrics } : {}),
      ...(o.watchdogMs ? { watchdogMs: o.watchdogMs } : {}),
    });
    const toPod = (ns: string, p: PeerPod) => trimPod(podOfPeer(ns, p));
    this.stream = new RelayStream(
      {
        begin: (full) => void (this.collecting = full ? [] : undefined),
        put: (ns, p) =>
          this.collecting ? this.collecting.push(toPod(ns, p)) : this.remote.put(toPod(ns, p)),
        del: (ns, name) => this.remote.delete(ns, name),
        synced: () => {
          if (this.collecting) this.remote.replace(this.collecting);
          this.collecting = undefined;
          this.streamSynced = true;
          this.events.synced();
        },
      },
      o.tickMs,
    );
  }

  start(): void {
    this.endpoints.start();
    this.running = this.loop();
  }

  async stop(): Promise<void> {
    this.abort.abort();
    await Promise.all([this.running, this.endpoints.stop()]);
  }

  /** A stream delivered within `ms` (a snapshot of a busy relay still coming in). */
  flowing(ms: number): boolean {
    return this.stream.flowing(ms);
  }

  /** The next stream starts from a snapshot (the peers were changed by another source). */
  forget(): void {
    this.stream.reset();
  }

  /** Ready relays, this node's choice first (rendezvous hashing: stable as replicas come and go). */
  targets(): { host: string; port: number }[] {
    const all = this.endpoints
      .list()
      .flatMap((s) => s.hosts.map((host) => ({ host, port: s.port })));
    const score = (t: { host: string }) =>
      createHash('sha256').update(`${this.o.nodeName}/${t.host}`).digest('hex');
    return all
      .map((t) => ({ t, s: score(t) }))
      .sort((a, b) => (a.s < b.s ? -1 : 1))
      .map((x) => x.t);
  }

  private async loop(): Promise<void> {
    const signal = this.abort.signal;
    await this.endpoints.synced.catch(() => undefined);
    const { relay } = this.o;
    const serverName = `${relay.service}.${relay.namespace}.svc`;
    let failures = 0;
    while (!signal.aborted) {
      const targets = this.targets();
      const t = targets[failures % Math.max(1, targets.length)];
      if (!t) {
        this.events.lost();
        await sleep(2_000, signal);
        continue;
      }
      const id = `${t.host}:${t.port}`;
      if (id !== this.target) this.stream.reset(); // another relay: positions are its own
      this.target = id;
      try {
        const target: RelayTarget = {
          ...t,
          serverName,
          ca: readFileSync(relay.caFile, 'utf8'),
        };
        const open = (this.o.open ?? httpsRelay)(target);
        const token = readFileSync(relay.tokenFile, 'utf8').trim();
        this.streamSynced = false;
        await this.stream.run(open, token, signal);
        this.o.logger.info('the peer relay closed the stream', { relay: id });
      } catch (error) {
        if (signal.aborted) return;
        this.o.logger.warn('peer relay stream failed', { relay: id, error: String(error) });
      }
      this.collecting = undefined;
      this.events.lost();
      // After a stream that synced, again at once (the relay restarted or moved); after
      // failures, from 0.4 s to 5 s (another replica each time, where there are others).
      failures = this.streamSynced ? 0 : failures + 1;
      await sleep(failures === 0 ? 100 : Math.min(5_000, 200 * 2 ** failures), signal);
    }
  }
}
