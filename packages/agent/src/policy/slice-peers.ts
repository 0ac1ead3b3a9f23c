// NetworkPolicy peers from PeerSlices: this node's pods from the node's own pod cache (a watch of
// spec.nodeName = this node), every other pod from the slices the operator publishes (one record
// a pod, rewritten only when what policy reads of it changes). Read by the reconciler as it reads
// a pod cache (PolicyPods). A record becomes a pod through the pod cache's own trim as its slice
// enters the cache, and keeps its object while it means the same to policy: translation
// memoizes by object. Where the PeerSlice
// CRD is not installed (an upgrade that skipped the CRDs) the peers come from a watch of every
// Pod instead, said at start, until the agent restarts: never no peers at all.
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
import { samePolicyPod, type PolicyPods } from './caches.js';

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
}

export class SlicePeers implements PolicyPods {
  /** Every PeerSlice. */
  readonly slices: Cache<CachedPeerSlice>;
  readonly synced: Promise<void>;
  /** Namespace → pod name → pod (keyed by the pod's own name string: no key a pod). */
  private readonly peers = new Map<string, Map<string, Pod>>();
  private readonly handlers = new Set<CacheHandler<Pod>>();
  /** Every pod, where the PeerSlice CRD is not installed. */
  private fallback: Cache<Pod> | undefined;
  private resolveSource!: (source: Cache<CachedPeerSlice> | Cache<Pod>) => void;
  private readonly source = new Promise<Cache<CachedPeerSlice> | Cache<Pod>>(
    (r) => (this.resolveSource = r),
  );
  private stopped = false;

  constructor(private readonly o: SlicePeersOptions) {
    this.slices = new Cache<CachedPeerSlice>({
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
    this.slices.addHandler({
      onAdd: (s) => this.sliceChanged(undefined, s),
      onUpdate: (a, b) => this.sliceChanged(a, b),
      onDelete: (s) => this.sliceChanged(s, undefined),
    });
    this.synced = Promise.all([o.own.synced, this.source.then((c) => c.synced)]).then(
      () => undefined,
    );
    this.synced.catch(() => undefined); // stopped before sync
  }

  /** Start the slices' watch (or, without their CRD, a watch of every pod). */
  async start(): Promise<void> {
    for (let attempt = 0; !this.stopped; attempt++) {
      try {
        if (await resourceServed(this.o.transport, PEERSLICES)) {
          this.slices.start();
          this.resolveSource(this.slices);
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
      onAdd: (p) => this.emit((h) => h.onAdd?.(p)),
      onUpdate: (a, b) => this.emit((h) => h.onUpdate?.(a, b)),
      onDelete: (p) => this.emit((h) => h.onDelete?.(p)),
    });
    all.start();
    this.resolveSource(all);
  }

  async stop(): Promise<void> {
    this.stopped = true;
    await Promise.all([this.slices.stop(), this.fallback?.stop()]);
  }

  list(): Pod[] {
    const out = this.o.own.list();
    if (this.fallback) {
      for (const p of this.fallback.list()) if (p.spec?.nodeName !== this.o.nodeName) out.push(p);
      return out;
    }
    return this.remote(out);
  }

  getObject(name: string, namespace?: string): Pod | undefined {
    return (
      this.o.own.getObject(name, namespace) ??
      (this.fallback
        ? this.fallback.getObject(name, namespace)
        : this.peers.get(namespace ?? '')?.get(name))
    );
  }

  addHandler(handler: CacheHandler<Pod>, options: { replay?: boolean } = {}): () => void {
    const off = this.o.own.addHandler(handler, options);
    this.handlers.add(handler);
    if (options.replay !== false)
      for (const p of this.fallback ? this.fallback.list() : this.remote()) handler.onAdd?.(p);
    return () => {
      off();
      this.handlers.delete(handler);
    };
  }

  /** The pods of the slices, added to `out` (150,000 of them: no spread into push). */
  private remote(out: Pod[] = []): Pod[] {
    for (const names of this.peers.values()) for (const p of names.values()) out.push(p);
    return out;
  }

  /**
   * A slice changed: its pods that changed (for policy) become pod events. An unchanged pod
   * keeps its object, in the slice too: translation memoizes by object, and the cache then
   * holds one object a pod.
   */
  private sliceChanged(before: CachedPeerSlice | undefined, after: CachedPeerSlice | undefined) {
    const slice = (after ?? before)?.metadata.name as string;
    const seen = new Set<string>();
    if (after) {
      const ns = after.spec.namespace;
      let names = this.peers.get(ns);
      if (!names) this.peers.set(ns, (names = new Map<string, Pod>()));
      const pods = after.spec.pods;
      for (let i = 0; i < pods.length; i++) {
        const pod = pods[i] as Pod;
        // This node's pods come from its own pod cache.
        if (pod.spec?.nodeName === this.o.nodeName) continue;
        const name = pod.metadata.name;
        seen.add(name);
        const had = names.get(name);
        if (had && samePolicyPod(had, pod)) {
          pods[i] = had;
          continue;
        }
        names.set(name, pod);
        this.emit((h) => (had ? h.onUpdate?.(had, pod) : h.onAdd?.(pod)));
      }
    }
    if (!before) return;
    const ns = before.spec.namespace;
    const names = this.peers.get(ns);
    for (const pod of before.spec.pods) {
      const name = pod.metadata.name;
      const had = names?.get(name);
      // Gone from this slice, and in no other (a pod moving between slices is in two a moment).
      if (seen.has(name) || !had || this.inAnotherSlice(ns, name, slice)) continue;
      names?.delete(name);
      this.emit((h) => h.onDelete?.(had));
    }
    if (names?.size === 0) this.peers.delete(ns);
  }

  private inAnotherSlice(namespace: string, name: string, slice: string): boolean {
    return this.slices
      .byIndex(BY_NAMESPACE, namespace)
      .some((s) => s.metadata.name !== slice && s.spec.pods.some((p) => p.metadata.name === name));
  }

  private emit(call: (h: CacheHandler<Pod>) => void): void {
    for (const h of [...this.handlers]) {
      try {
        call(h);
      } catch (error) {
        this.o.logger.error('peer handler failed', { error: String(error) });
      }
    }
  }
}
