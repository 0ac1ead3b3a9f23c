// Where ClusterNetworkPolicy `nodes` peers come from. A watch of every Node sends each kubelet
// status report to every agent (nodes² events); the operator publishes instead one NodePeer a
// Node (labels and IP addresses), rewritten only when those change. With `nodePeers` the agent
// reads NodePeers, once it sees its own node's: until then (an operator that publishes none yet,
// e.g. during an upgrade, or one that has not caught up) it watches every Node, so no node goes
// missing from a rule meanwhile. Where the NodePeer CRD is not installed (an upgrade that skipped
// the CRDs) it watches every Node, said once.
import { NodePeer, type Logger } from '@flock/api';
import {
  Cache,
  NODEPEERS,
  NODES,
  resourceListWatch,
  whenServed,
  type KubeTransport,
  type WhenServedOptions,
} from '@flock/kube';
import { Node } from '@flock/netpol';

/** A Node as a `nodes` peer reads it: name, labels, the addresses of its status. */
// A type alias, not an interface: it must fit netpol's loose Node (an index signature).
export type PolicyNode = {
  metadata: { name: string; labels?: Record<string, string> };
  status: { addresses: { address: string }[] };
};
export const PolicyNode = Node.transform((n): PolicyNode => ({
  metadata: {
    name: n.metadata.name,
    ...(n.metadata.labels ? { labels: n.metadata.labels } : {}),
  },
  // The type is not read: any entry that parses as an address counts.
  status: { addresses: (n.status?.addresses ?? []).map((a) => ({ address: a.address })) },
}));

/** A NodePeer as the same peer: named after its Node, with the Node's labels and addresses. */
const PolicyNodeOfPeer = NodePeer.transform((p): PolicyNode => ({
  metadata: {
    name: p.metadata.name,
    ...(p.spec.labels ? { labels: p.spec.labels } : {}),
  },
  status: { addresses: p.spec.addresses.map((address) => ({ address })) },
}));

// Node status changes often (heartbeats are Leases, but conditions still move): only a change of
// what a peer reads triggers a pass (a NodePeer changes only then).
const sameNode = (a: PolicyNode, b: PolicyNode) => JSON.stringify(a) === JSON.stringify(b);

export interface PolicyNodesOptions extends Pick<WhenServedOptions, 'retryMs'> {
  transport: KubeTransport;
  logger: Logger;
  watchdogMs?: number;
  /** Read the operator's NodePeers once this node's own is published. */
  nodePeers?: { nodeName: string };
}

export class PolicyNodes {
  private active: Cache<PolicyNode> | undefined;
  private nodes: Cache<PolicyNode> | undefined;
  private peers: Cache<PolicyNode> | undefined;
  private probe: { stop(): void } | undefined;
  private stopped = false;
  private onChange: () => void = () => undefined;
  private resolveSynced!: () => void;
  /** The first source in use has synced. */
  readonly synced = new Promise<void>((r) => (this.resolveSynced = r));

  constructor(private readonly o: PolicyNodesOptions) {}

  list(): PolicyNode[] {
    return this.active?.list() ?? [];
  }

  start(onChange: () => void): void {
    this.onChange = onChange;
    const own = this.o.nodePeers;
    if (!own) {
      this.watchNodes();
      return;
    }
    const probe = whenServed({
      transport: this.o.transport,
      ref: NODEPEERS,
      logger: this.o.logger,
      absentMessage:
        'the NodePeer CRD is not installed (apply charts/flock/crds/): ClusterNetworkPolicy node peers come from a watch of every Node',
      ...(this.o.retryMs ? { retryMs: this.o.retryMs } : {}),
      onServed: () => void this.watchPeers(own.nodeName),
      onAbsent: () => {
        probe.stop();
        this.watchNodes();
      },
    });
    this.probe = probe;
  }

  async stop(): Promise<void> {
    this.stopped = true;
    this.probe?.stop();
    this.resolveSynced();
    await Promise.all([this.nodes?.stop(), this.peers?.stop()]);
  }

  private cache(kind: 'nodes' | 'node-peers'): Cache<PolicyNode> {
    const { transport, logger, watchdogMs } = this.o;
    const cache = new Cache<PolicyNode>({
      ...(kind === 'nodes'
        ? { source: resourceListWatch(transport, NODES), schema: PolicyNode }
        : { source: resourceListWatch(transport, NODEPEERS), schema: PolicyNodeOfPeer }),
      name: kind === 'nodes' ? 'policy-nodes' : 'policy-nodepeers',
      logger,
      ...(watchdogMs ? { watchdogMs } : {}),
    });
    // Only the source in use triggers passes.
    const trigger = () => void (this.active === cache && this.onChange());
    cache.addHandler(
      { onAdd: trigger, onDelete: trigger, onUpdate: (a, b) => void (sameNode(a, b) || trigger()) },
      { replay: false },
    );
    return cache;
  }

  /** Every Node, from now on or until this node's NodePeer appears. */
  private watchNodes(): void {
    if (this.stopped || this.nodes) return;
    const nodes = this.cache('nodes');
    this.nodes = nodes;
    nodes.start();
    void nodes.synced.then(
      () => {
        if (this.active) return; // NodePeers took over meanwhile
        this.active = nodes;
        this.resolveSynced();
        this.onChange();
      },
      () => undefined, // stopped before sync
    );
  }

  private async watchPeers(nodeName: string): Promise<void> {
    if (this.stopped) return;
    const peers = this.cache('node-peers');
    this.peers = peers;
    // After the first sync (the list is whole by then), this node's NodePeer appearing.
    const ownSeen = (p: PolicyNode) =>
      void (p.metadata.name === nodeName && peers.hasSynced && this.usePeers());
    peers.addHandler({ onAdd: ownSeen, onUpdate: (_, p) => ownSeen(p) });
    peers.start();
    try {
      await peers.synced;
    } catch {
      return; // stopped before sync
    }
    if (peers.getObject(nodeName)) {
      this.usePeers();
      return;
    }
    if (this.active) return;
    this.o.logger.info(
      `this node's NodePeer (${nodeName}) is not published yet: ClusterNetworkPolicy node peers come from a watch of every Node until it is`,
    );
    this.watchNodes();
  }

  /** This node's NodePeer is published: the operator publishes, the Node watch can go. */
  private usePeers(): void {
    const peers = this.peers;
    if (!peers || this.active === peers || this.stopped) return;
    const wasNodes = this.active !== undefined;
    this.active = peers;
    const nodes = this.nodes;
    this.nodes = undefined;
    void nodes?.stop();
    if (wasNodes) this.o.logger.info('ClusterNetworkPolicy node peers now come from NodePeers');
    this.resolveSynced();
    this.onChange();
  }
}
