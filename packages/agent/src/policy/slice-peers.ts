// NetworkPolicy peers from PeerSlices: this node's pods from the node's own pod cache (a watch of
// spec.nodeName = this node), every other pod from the slices the operator publishes (one record
// a pod, rewritten only when what policy reads of it changes). Read by the reconciler as it reads
// a pod cache (PolicyPods). A record becomes a pod through the pod cache's own trim, and keeps
// its object while its record is the same: translation memoizes by object. Where the PeerSlice
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

/** What policy reads of its peer pods: a pod cache has it, and so has SlicePeers. */
export interface PolicyPods {
  readonly synced: Promise<void>;
  list(): Pod[];
  getObject(name: string, namespace?: string): Pod | undefined;
  addHandler(handler: CacheHandler<Pod>, options?: { replay?: boolean }): () => void;
}

interface Peer {
  pod: Pod;
  /** Its record's JSON: an unchanged record keeps its pod. */
  json: string;
  /** The slice that holds it (a pod moving between slices is in two for a moment). */
  slice: string;
}

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
  readonly slices: Cache<PeerSlice>;
  readonly synced: Promise<void>;
  private readonly peers = new Map<string, Peer>();
  private readonly handlers = new Set<CacheHandler<Pod>>();
  /** Every pod, where the PeerSlice CRD is not installed. */
  private fallback: Cache<Pod> | undefined;
  private resolveSource!: (source: Cache<PeerSlice> | Cache<Pod>) => void;
  private readonly source = new Promise<Cache<PeerSlice> | Cache<Pod>>(
    (r) => (this.resolveSource = r),
  );
  private stopped = false;

  constructor(private readonly o: SlicePeersOptions) {
    this.slices = new Cache<PeerSlice>({
      source: resourceListWatch(o.transport, PEERSLICES),
      schema: PeerSlice,
      name: 'policy-peerslices',
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
    for (const p of this.peers.values()) out.push(p.pod);
    return out;
  }

  getObject(name: string, namespace?: string): Pod | undefined {
    const key = `${namespace ?? ''}/${name}`;
    return (
      this.o.own.getObject(name, namespace) ??
      (this.fallback ? this.fallback.getObject(name, namespace) : this.peers.get(key)?.pod)
    );
  }

  addHandler(handler: CacheHandler<Pod>, options: { replay?: boolean } = {}): () => void {
    const off = this.o.own.addHandler(handler, options);
    this.handlers.add(handler);
    if (options.replay !== false)
      for (const p of this.fallback
        ? this.fallback.list()
        : [...this.peers.values()].map((x) => x.pod))
        handler.onAdd?.(p);
    return () => {
      off();
      this.handlers.delete(handler);
    };
  }

  /** A slice changed: its records that changed become pod events. */
  private sliceChanged(before: PeerSlice | undefined, after: PeerSlice | undefined): void {
    const slice = (after ?? before)?.metadata.name as string;
    const seen = new Set<string>();
    if (after) {
      const ns = after.spec.namespace;
      for (const record of after.spec.pods) {
        // This node's pods come from its own pod cache.
        if (record.node === this.o.nodeName) continue;
        const key = `${ns}/${record.name}`;
        seen.add(key);
        const json = JSON.stringify(record);
        const had = this.peers.get(key);
        if (had?.json === json) {
          had.slice = slice;
          continue;
        }
        const pod = trimPod(podOfPeer(ns, record));
        this.peers.set(key, { pod, json, slice });
        this.emit((h) => (had ? h.onUpdate?.(had.pod, pod) : h.onAdd?.(pod)));
      }
    }
    if (!before) return;
    for (const record of before.spec.pods) {
      const key = `${before.spec.namespace}/${record.name}`;
      const had = this.peers.get(key);
      // Gone from this slice, and not since placed in another one.
      if (seen.has(key) || !had || had.slice !== slice) continue;
      this.peers.delete(key);
      this.emit((h) => h.onDelete?.(had.pod));
    }
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
