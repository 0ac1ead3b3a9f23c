// NetworkPolicy peers from PeerSlices: this node's pods from the node's own pod cache (a watch of
// spec.nodeName = this node), every other pod from the slices the operator publishes (one record
// a pod, rewritten only when what policy reads of it changes). Read by the reconciler as it reads
// a pod cache (PolicyPods). A record becomes a pod through the pod cache's own trim as its slice
// enters the cache, and keeps its object while it means the same to policy: translation
// memoizes by object. With a peer relay (--peer-relay) the records come from the relay instead,
// and the slices are watched only while no relay has given a complete state for `fallbackMs`.
// Where the PeerSlice CRD is not installed (an upgrade that skipped the CRDs) the peers come
// from a watch of every Pod instead, said at start, until the agent restarts: never no peers.
import { PeerSlice, podOfPeer, type Logger, type Pod } from '@flock/api';
import {
  Cache,
  PEERSLICES,
  resourceListWatch,
  resourceServed,
  type CacheHandler,
  type KubeTransport,
  type MetricsOptions,
} from '@flock/kube';
import { trimPod } from '../node/pod-trim.js';
import { clusterPodCache } from '../node/pods.js';
import type { PolicyPods } from './caches.js';
import { RelayPeers, type PeerRelayConfig, type RelayPeersOptions } from './relay-peers.js';
import { RemotePeers } from './remote-peers.js';

/**
 * A slice as the agent keeps it: its records already turned into trimmed pods (the pod cache's
 * own trim), so a remote pod costs one object, as in a pod cache, and no copy of its record.
 */
export interface CachedPeerSlice {
  metadata: { name: string; resourceVersion?: string };
  spec: { namespace: string; pods: Pod[] };
}

const CachedPeerSlice = PeerSlice.transform((s): CachedPeerSlice => ({
  metadata: {
    name: s.metadata.name,
    ...(s.metadata.resourceVersion ? { resourceVersion: s.metadata.resourceVersion } : {}),
  },
  spec: {
    namespace: s.spec.namespace,
    pods: s.spec.pods.map((r) => trimPod(podOfPeer(s.spec.namespace, r))),
  },
}));

const BY_NAMESPACE = 'namespace';

export interface SlicePeersOptions {
  /** This node's pods (the agent's pod cache, started by its owner). */
  own: Cache<Pod>;
  nodeName: string;
  transport: KubeTransport;
  logger: Logger;
  metrics?: MetricsOptions;
  watchdogMs?: number;
  /** Read the records from a peer relay (the slices only while it is away). */
  relay?: PeerRelayConfig & Pick<RelayPeersOptions, 'open' | 'tickMs'>;
  /** How long without a relay before the slices are watched directly (default 10 s). */
  fallbackMs?: number;
}

export class SlicePeers implements PolicyPods {
  /** Every PeerSlice, while they are watched directly. */
  slices: Cache<CachedPeerSlice> | undefined;
  readonly synced: Promise<void>;
  readonly remote: RemotePeers;
  readonly relay: RelayPeers | undefined;
  /** Every pod, where the PeerSlice CRD is not installed. */
  private fallback: Cache<Pod> | undefined;
  private resolveRemote!: () => void;
  /** The relay's state is the peers' (the slices are not watched). */
  private relayActive = false;
  private fallbackTimer: NodeJS.Timeout | undefined;
  private stopped = false;
  private readonly fallbackMs: number;

  constructor(private readonly o: SlicePeersOptions) {
    this.remote = new RemotePeers(o.nodeName, o.logger);
    this.fallbackMs = o.fallbackMs ?? 10_000;
    const remoteSynced = new Promise<void>((r) => (this.resolveRemote = r));
    this.synced = Promise.all([o.own.synced, remoteSynced]).then(() => undefined);
    this.synced.catch(() => undefined); // stopped before sync
    this.relay = o.relay
      ? new RelayPeers(
          {
            relay: o.relay,
            transport: o.transport,
            logger: o.logger,
            nodeName: o.nodeName,
            ...(o.relay.open ? { open: o.relay.open } : {}),
            ...(o.relay.tickMs ? { tickMs: o.relay.tickMs } : {}),
            ...(o.metrics ? { metrics: o.metrics } : {}),
            ...(o.watchdogMs ? { watchdogMs: o.watchdogMs } : {}),
          },
          this.remote,
          { synced: () => this.relaySynced(), lost: () => this.relayLost() },
        )
      : undefined;
  }

  /** Start the relay's stream or the slices' watch (or, without their CRD, every pod's). */
  async start(): Promise<void> {
    for (let attempt = 0; !this.stopped; attempt++) {
      try {
        if (await resourceServed(this.o.transport, PEERSLICES)) {
          if (this.relay) {
            this.relay.start();
            this.armFallback();
          } else this.watchSlices();
          return;
        }
        break;
      } catch (error) {
        this.o.logger.warn('cannot tell whether PeerSlices are served; asking again', {
          error: String(error),
        });
        await new Promise((r) => setTimeout(r, Math.min(30_000, 500 * 2 ** attempt)));
      }
    }
    if (this.stopped) return;
    this.o.logger.error(
      'the PeerSlice CRD is not installed (apply charts/flock/crds/): NetworkPolicy peers come from a watch of every Pod until the agent restarts',
    );
    const all = clusterPodCache(this.o.transport, this.o.logger, this.o.watchdogMs);
    this.fallback = all;
    all.addHandler({
      onAdd: (p) => this.remote.put(p),
      onUpdate: (_, p) => this.remote.put(p),
      onDelete: (p) => this.remote.delete(p.metadata.namespace ?? '', p.metadata.name),
    });
    all.start();
    void all.synced.then(
      () => this.resolveRemote(),
      () => undefined,
    );
  }

  async stop(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.fallbackTimer);
    await Promise.all([this.slices?.stop(), this.fallback?.stop(), this.relay?.stop()]);
  }

  list(): Pod[] {
    return this.remote.list(this.o.own.list());
  }

  getObject(name: string, namespace?: string): Pod | undefined {
    return this.o.own.getObject(name, namespace) ?? this.remote.get(namespace ?? '', name);
  }

  addHandler(handler: CacheHandler<Pod>, options: { replay?: boolean } = {}): () => void {
    const off = this.o.own.addHandler(handler, options);
    const offRemote = this.remote.addHandler(handler);
    if (options.replay !== false) for (const p of this.remote.list()) handler.onAdd?.(p);
    return () => {
      off();
      offRemote();
    };
  }

  /** The relay gave a complete state: it is the peers' source; the slices need no watch. */
  private relaySynced(): void {
    clearTimeout(this.fallbackTimer);
    this.fallbackTimer = undefined;
    if (!this.relayActive) this.o.logger.info('NetworkPolicy peers come from the peer relay');
    this.relayActive = true;
    const slices = this.slices;
    this.slices = undefined;
    void slices?.stop();
    this.resolveRemote();
  }

  /** The relay's stream ended: the peers stay; without a relay for a while, the slices. */
  private relayLost(): void {
    this.relayActive = false;
    if (!this.slices) this.armFallback();
  }

  private armFallback(): void {
    if (this.fallbackTimer || this.stopped) return;
    this.fallbackTimer = setTimeout(() => {
      this.fallbackTimer = undefined;
      if (this.relayActive || this.stopped) return;
      // A busy relay still sending its snapshot: waiting costs less than every agent it serves
      // turning to the API server at once.
      if (this.relay?.flowing(this.fallbackMs)) return this.armFallback();
      this.o.logger.warn('no peer relay: NetworkPolicy peers come from the PeerSlices meanwhile');
      // Its next stream must replace what the slices changed: a snapshot, not a resume.
      this.relay?.forget();
      this.watchSlices();
    }, this.fallbackMs);
  }

  /** Watch every PeerSlice; once synced, the peers are exactly the slices'. */
  private watchSlices(): void {
    if (this.slices) return;
    const o = this.o;
    const slices = new Cache<CachedPeerSlice>({
      source: resourceListWatch(o.transport, PEERSLICES),
      schema: CachedPeerSlice,
      name: 'policy-peerslices',
      // A slice holds up to 20 pods: pages of 50 are ≈ 1,000 records, as a pod list's 500
      // pods are in bytes (a page of 500 full slices would be ≈ 5 MB of JSON at once).
      pageSize: 50,
      indexers: { [BY_NAMESPACE]: (x) => [x.spec.namespace] },
      logger: o.logger,
      ...(o.metrics ? { metrics: o.metrics } : {}),
      ...(o.watchdogMs ? { watchdogMs: o.watchdogMs } : {}),
    });
    const mine = () => this.slices === slices && !this.relayActive;
    slices.addHandler({
      onAdd: (s) => mine() && this.sliceChanged(slices, undefined, s),
      onUpdate: (a, b) => mine() && this.sliceChanged(slices, a, b),
      onDelete: (s) => mine() && this.sliceChanged(slices, s, undefined),
    });
    this.slices = slices;
    slices.start();
    void slices.synced.then(
      () => {
        if (!mine()) return;
        // Whatever another source left that no slice holds is gone.
        const held = new Set<string>();
        for (const s of slices.list())
          for (const p of s.spec.pods) held.add(`${s.spec.namespace}/${p.metadata.name}`);
        this.remote.retain((ns, name) => held.has(`${ns}/${name}`));
        this.resolveRemote();
      },
      () => undefined,
    );
  }

  /**
   * A slice changed: its pods that changed (for policy) become pod events. An unchanged pod
   * keeps its object, in the slice too: translation memoizes by object, and the cache then
   * holds one object a pod.
   */
  private sliceChanged(
    slices: Cache<CachedPeerSlice>,
    before: CachedPeerSlice | undefined,
    after: CachedPeerSlice | undefined,
  ) {
    const slice = (after ?? before)?.metadata.name as string;
    const seen = new Set<string>();
    if (after) {
      const pods = after.spec.pods;
      for (let i = 0; i < pods.length; i++) {
        const kept = this.remote.put(pods[i] as Pod);
        if (!kept) continue; // this node's: from its own pod cache
        seen.add(kept.metadata.name);
        pods[i] = kept;
      }
    }
    if (!before) return;
    const ns = before.spec.namespace;
    for (const pod of before.spec.pods) {
      const name = pod.metadata.name;
      // Gone from this slice, and in no other (a pod moving between slices is in two a moment).
      if (seen.has(name) || inAnotherSlice(slices, ns, name, slice)) continue;
      this.remote.delete(ns, name);
    }
  }
}

function inAnotherSlice(
  slices: Cache<CachedPeerSlice>,
  namespace: string,
  name: string,
  slice: string,
): boolean {
  return slices
    .byIndex(BY_NAMESPACE, namespace)
    .some((s) => s.metadata.name !== slice && s.spec.pods.some((p) => p.metadata.name === name));
}
