// The peer slice publisher: one watch of every Pod, turned into PeerSlices that every agent
// watches instead (docs/architecture.md, "What the agents ask of the API server"). A pod change
// that policy does not read (a status heartbeat, a readiness flap of an ordinary pod) is no
// change here. Changes are coalesced per namespace for `batchMs`, so a rollout of many pods of
// one namespace rewrites each of its slices once. The caches run on leader and standbys alike;
// only the leader writes.
import { API_VERSION, PEERSLICE_KIND, Pod, PeerSlice, peerOfPod, type PeerPod } from '@flock/api';
import {
  Cache,
  PEERSLICES,
  PODS,
  deleteObject,
  objectPath,
  resourcePath,
  resourceListWatch,
  whenServed,
  type KubeTransport,
  type Logger,
  type MetricsOptions,
  type ReconcileContext,
} from '@flock/kube';
import { countedWrite, type OperatorMetrics } from '../metrics.js';
import { LeaderController, OwnWrites } from './leading.js';
import { planSlices, sliceEntry, type SliceEntry } from './pack.js';

/** How long changes of one namespace are gathered before its slices are written (default). */
export const DEFAULT_PEER_BATCH_MS = 250;

const BY_NAMESPACE = 'namespace';

/** What the publisher keeps of a pod: its key and its record (none: not a peer). */
interface PodPeer {
  metadata: { name: string; namespace: string };
  peer: PeerPod | undefined;
}
const PodPeer = Pod.transform((p): PodPeer => ({
  metadata: { name: p.metadata.name, namespace: p.metadata.namespace },
  peer: peerOfPod(p),
}));

const samePeer = (a: PodPeer, b: PodPeer) => JSON.stringify(a.peer) === JSON.stringify(b.peer);

/** What the publisher keeps of a slice: the object with each record as its name and digest. */
type CachedSlice = Omit<PeerSlice, 'spec'> & {
  spec: { namespace: string; pods: SliceEntry[] };
};
const CachedSlice = PeerSlice.transform((s): CachedSlice => ({
  ...s,
  spec: { namespace: s.spec.namespace, pods: s.spec.pods.map(sliceEntry) },
}));

export interface PeerSlicePublisherOptions {
  transport: KubeTransport;
  logger: Logger;
  metrics?: OperatorMetrics;
  metricsOptions?: MetricsOptions;
  watchdogMs?: number;
  batchMs?: number;
  /** Namespaces written in parallel (default 4). */
  workers?: number;
}

export class PeerSlicePublisher {
  readonly pods: Cache<PodPeer>;
  readonly slices: Cache<CachedSlice>;
  private readonly own = new OwnWrites<CachedSlice>();
  private readonly leader: LeaderController;
  private readonly batchMs: number;
  private readonly offs: (() => void)[] = [];
  private probe: { stop(): void } | undefined;

  constructor(private readonly o: PeerSlicePublisherOptions) {
    this.batchMs = o.batchMs ?? DEFAULT_PEER_BATCH_MS;
    const common = {
      logger: o.logger,
      ...(o.metricsOptions ? { metrics: o.metricsOptions } : {}),
      ...(o.watchdogMs ? { watchdogMs: o.watchdogMs } : {}),
    };
    this.pods = new Cache<PodPeer>({
      source: resourceListWatch(o.transport, PODS),
      schema: PodPeer,
      name: 'peer-pods',
      indexers: { [BY_NAMESPACE]: (p) => [p.metadata.namespace] },
      ...common,
    });
    this.slices = new Cache<CachedSlice>({
      source: resourceListWatch(o.transport, PEERSLICES),
      schema: CachedSlice,
      name: 'peerslices',
      indexers: { [BY_NAMESPACE]: (s) => [s.spec.namespace] },
      ...common,
    });
    this.leader = new LeaderController({
      name: 'peerslices',
      workers: o.workers ?? 4,
      logger: o.logger,
      ...(o.metricsOptions ? { metricsOptions: o.metricsOptions } : {}),
      reconcile: (namespace, ctx) => this.reconcile(namespace, ctx),
      // Before the sync an empty cache would read as "every pod is gone": delete every slice.
      synced: () => Promise.all([this.pods.synced, this.slices.synced]),
      keys: () =>
        new Set([...this.pods.indexValues(BY_NAMESPACE), ...this.slices.indexValues(BY_NAMESPACE)]),
      onStop: () => this.own.clear(),
    });
  }

  /** Start the caches (every replica, so a new leader starts warm). */
  start(): void {
    const later = (namespace: string) => this.leader.enqueueAfter(namespace, this.batchMs);
    this.offs.push(
      this.pods.addHandler({
        onAdd: (p) => p.peer && later(p.metadata.namespace),
        onUpdate: (a, b) => void (samePeer(a, b) || later(b.metadata.namespace)),
        onDelete: (p) => p.peer && later(p.metadata.namespace),
      }),
      this.slices.addHandler(this.own.handler((s) => later(s.spec.namespace))),
    );
    // Without the CRD (an upgrade that skipped the CRDs) nothing is published, and the agents
    // watch every pod instead; the caches start once it is installed.
    this.probe = whenServed({
      transport: this.o.transport,
      ref: PEERSLICES,
      logger: this.o.logger,
      absentMessage:
        'the PeerSlice CRD is not installed (apply charts/flock/crds/): no peer slices are published until it is',
      onServed: () => {
        this.pods.start();
        this.slices.start();
      },
    });
  }

  /** Lead (write) or stop writing. Leading starts once both caches have synced. */
  setLeading(leading: boolean): Promise<void> {
    return this.leader.setLeading(leading);
  }

  async stop(): Promise<void> {
    this.probe?.stop();
    await this.setLeading(false);
    for (const off of this.offs.splice(0)) off();
    await Promise.all([this.pods.stop(), this.slices.stop()]);
  }

  /** Write the namespace's slices so they hold exactly its pods' records. */
  async reconcile(namespace: string, ctx: ReconcileContext): Promise<void> {
    const desired = new Map<string, PeerPod>();
    for (const p of this.pods.byIndex(BY_NAMESPACE, namespace))
      if (p.peer) desired.set(p.peer.name, p.peer);
    const existing = this.own.written
      .overlay(this.slices.byIndex(BY_NAMESPACE, namespace))
      .filter((s) => s.spec.namespace === namespace && !this.own.deleted.has(s.metadata.name));
    const byName = new Map(existing.map((s) => [s.metadata.name, s]));
    const plan = planSlices(
      existing.map((s) => ({ name: s.metadata.name, peers: s.spec.pods })),
      desired,
    );
    const { transport } = this.o;
    for (const { name, peers } of plan.update) {
      if (ctx.signal.aborted) return;
      const read = byName.get(name) as CachedSlice;
      const body = { ...read, spec: { namespace, pods: peers } };
      this.record(
        await countedWrite(this.o.metrics, 'peerslice_update', () =>
          transport.request({ method: 'PUT', path: objectPath(PEERSLICES, name), body }),
        ),
      );
    }
    for (const peers of plan.create) {
      if (ctx.signal.aborted) return;
      const body = {
        apiVersion: API_VERSION,
        kind: PEERSLICE_KIND,
        // A namespace has up to 63 characters: the name stays far below 253.
        metadata: { generateName: `${namespace}-` },
        spec: { namespace, pods: peers },
      };
      this.record(
        await countedWrite(this.o.metrics, 'peerslice_create', () =>
          transport.request({ method: 'POST', path: resourcePath(PEERSLICES), body }),
        ),
      );
    }
    for (const name of plan.remove) {
      if (ctx.signal.aborted) return;
      const { uid, resourceVersion } = (byName.get(name) as CachedSlice).metadata;
      await countedWrite(this.o.metrics, 'peerslice_delete', () =>
        deleteObject(transport, PEERSLICES, name, {
          ...(uid ? { uid } : {}),
          ...(resourceVersion ? { resourceVersion } : {}),
        }),
      );
      this.own.deleted.add(name);
    }
  }

  private record(result: unknown): void {
    const parsed = CachedSlice.safeParse(result);
    if (parsed.success) this.own.written.record(parsed.data);
  }
}
