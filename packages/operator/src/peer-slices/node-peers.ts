// The node peer publisher: the operator's own Node cache turned into one NodePeer a Node (its
// labels and IP addresses), which every agent watches for ClusterNetworkPolicy `nodes` peers
// instead of every Node (docs/architecture.md, "What the agents ask of the API server"). A
// kubelet's status report changes no record, so it reaches no agent. The NodePeer cache runs on
// leader and standbys alike; only the leader writes.
import {
  API_VERSION,
  NODEPEER_KIND,
  NodePeer,
  nodePeerOf,
  sameNodePeer,
  type NodePeerSpec,
} from '@flock/api';
import {
  Cache,
  NODEPEERS,
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
import type { Node } from '../nodes.js';
import { LeaderController, OwnWrites } from './leading.js';

export interface NodePeerPublisherOptions {
  transport: KubeTransport;
  logger: Logger;
  /** The operator's Node cache (started by its owner). */
  nodes: Cache<Node>;
  metrics?: OperatorMetrics;
  metricsOptions?: MetricsOptions;
  watchdogMs?: number;
  /** Node peers written in parallel (default 2). */
  workers?: number;
}

/** The owner reference a NodePeer carries: the garbage collector deletes it with its Node. */
const ownerOf = (node: Node) => ({
  apiVersion: 'v1',
  kind: 'Node',
  name: node.metadata.name,
  uid: node.metadata.uid,
});

const ownedBy = (peer: NodePeer, uid: string) =>
  (peer.metadata.ownerReferences ?? []).some((r) => r['kind'] === 'Node' && r['uid'] === uid);

export class NodePeerPublisher {
  readonly peers: Cache<NodePeer>;
  private readonly own = new OwnWrites<NodePeer>();
  private readonly leader: LeaderController;
  private readonly offs: (() => void)[] = [];
  private probe: { stop(): void } | undefined;

  constructor(private readonly o: NodePeerPublisherOptions) {
    this.peers = new Cache<NodePeer>({
      source: resourceListWatch(o.transport, NODEPEERS),
      schema: NodePeer,
      name: 'nodepeers',
      logger: o.logger,
      ...(o.metricsOptions ? { metrics: o.metricsOptions } : {}),
      ...(o.watchdogMs ? { watchdogMs: o.watchdogMs } : {}),
    });
    this.leader = new LeaderController({
      name: 'nodepeers',
      workers: o.workers ?? 2,
      logger: o.logger,
      ...(o.metricsOptions ? { metricsOptions: o.metricsOptions } : {}),
      reconcile: (name, ctx) => this.reconcile(name, ctx),
      // Before the sync an empty Node cache would read as "every node is gone".
      synced: () => Promise.all([o.nodes.synced, this.peers.synced]),
      keys: () => [
        ...o.nodes.list().map((n) => n.metadata.name),
        ...this.peers.list().map((p) => p.metadata.name),
      ],
      onStop: () => this.own.clear(),
    });
  }

  /** Start the NodePeer cache (every replica, so a new leader starts warm). */
  start(): void {
    const enqueue = (name: string) => this.leader.enqueue(name);
    const peerChanged = (a: Node, b: Node) =>
      a.metadata.uid !== b.metadata.uid || !sameNodePeer(nodePeerOf(a), nodePeerOf(b));
    this.offs.push(
      this.o.nodes.addHandler({
        onAdd: (n) => enqueue(n.metadata.name),
        onUpdate: (a, b) => void (peerChanged(a, b) && enqueue(b.metadata.name)),
        onDelete: (n) => enqueue(n.metadata.name),
      }),
      this.peers.addHandler(this.own.handler((p) => enqueue(p.metadata.name))),
    );
    // Without the CRD (an upgrade that skipped the CRDs) nothing is published, and the agents
    // watch every Node instead; the cache starts once it is installed.
    this.probe = whenServed({
      transport: this.o.transport,
      ref: NODEPEERS,
      logger: this.o.logger,
      absentMessage:
        'the NodePeer CRD is not installed (apply charts/flock/crds/): no node peers are published until it is',
      onServed: () => this.peers.start(),
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
    await this.peers.stop();
  }

  /** Make the Node's NodePeer say what the Node says (none for a Node that is gone). */
  async reconcile(name: string, ctx: ReconcileContext): Promise<void> {
    if (ctx.signal.aborted) return;
    const node = this.o.nodes.getObject(name);
    const known = this.own.written.get(name, this.peers.getObject(name));
    const current = known && !this.own.deleted.has(name) ? known : undefined;
    const { transport } = this.o;
    if (!node) {
      if (!current) return;
      const { uid, resourceVersion } = current.metadata;
      await countedWrite(this.o.metrics, 'nodepeer_delete', () =>
        deleteObject(transport, NODEPEERS, name, {
          ...(uid ? { uid } : {}),
          ...(resourceVersion ? { resourceVersion } : {}),
        }),
      );
      this.own.deleted.add(name);
      return;
    }
    const spec: NodePeerSpec = nodePeerOf(node);
    if (current && sameNodePeer(current.spec, spec) && ownedBy(current, node.metadata.uid)) return;
    const metadata = current
      ? { ...current.metadata, ownerReferences: [ownerOf(node)] }
      : { name, ownerReferences: [ownerOf(node)] };
    const body = { apiVersion: API_VERSION, kind: NODEPEER_KIND, metadata, spec };
    const result = current
      ? await countedWrite(this.o.metrics, 'nodepeer_update', () =>
          transport.request({ method: 'PUT', path: objectPath(NODEPEERS, name), body }),
        )
      : await countedWrite(this.o.metrics, 'nodepeer_create', () =>
          transport.request({ method: 'POST', path: resourcePath(NODEPEERS), body }),
        );
    const parsed = NodePeer.safeParse(result);
    if (parsed.success) this.own.written.record(parsed.data);
  }
}
