// The inputs of ClusterNetworkPolicy enforcement, which exist only when sig-network's CRD
// (policy.networking.k8s.io/v1alpha2) is installed: the ClusterNetworkPolicies themselves
// (identity and spec, like NetworkPolicies: trim-policy.ts; checked by the reconciler, enforced
// fail-closed when unreadable or over-size) and the nodes (labels and IP addresses, for `nodes`
// peers: policy-nodes.ts, from the operator's NodePeers or every Node). Whether the CRD is
// there is asked of discovery (@flock/kube whenServed: not listed means not installed) at start
// and then every `recheckMs`; its absence is logged once. The caches start when it is found, and
// `ready` resolves after the first definite answer (and, when installed, the caches' first
// sync), so the first pass never runs without policies that exist.
import type { Logger } from '@flock/api';
import {
  CLUSTER_NETWORK_POLICIES,
  Cache,
  resourceListWatch,
  whenServed,
  type WhenServedOptions,
  type KubeObject,
  type KubeTransport,
} from '@flock/kube';
import { PolicyNodes, type PolicyNode } from './policy-nodes.js';
import { CachedClusterNetworkPolicy } from './trim-policy.js';

/** recheckMs, retryMs: how often the CRD is looked for (@flock/kube whenServed). */
export interface ClusterPolicyCachesOptions extends Pick<
  WhenServedOptions,
  'recheckMs' | 'retryMs'
> {
  transport: KubeTransport;
  logger: Logger;
  watchdogMs?: number;
  /** Node peers from the operator's NodePeers (the agent's --policy-peers=peer-slices). */
  nodePeers?: { nodeName: string };
}

export class ClusterPolicyCaches {
  private policies: Cache<KubeObject> | undefined;
  private nodes: PolicyNodes | undefined;
  private probing: { stop(): void } | undefined;
  private onChange: () => void = () => undefined;
  private resolveReady!: () => void;
  /** The first definite answer: not installed, or installed and synced. */
  readonly ready = new Promise<void>((r) => (this.resolveReady = r));

  constructor(private readonly options: ClusterPolicyCachesOptions) {}

  /** Is the CRD installed (and its caches running)? */
  get installed(): boolean {
    return this.policies !== undefined;
  }

  /** Probe for the CRD now (and later, while absent); `onChange` is called on every change. */
  start(onChange: () => void): void {
    this.onChange = onChange;
    this.probing = whenServed({
      transport: this.options.transport,
      ref: CLUSTER_NETWORK_POLICIES,
      logger: this.options.logger,
      absentMessage:
        'ClusterNetworkPolicy CRD (policy.networking.k8s.io/v1alpha2) is not installed: cluster policies are not enforced until it is',
      recheckMs: this.options.recheckMs,
      retryMs: this.options.retryMs,
      onAbsent: () => this.resolveReady(),
      onServed: () => this.startCaches(),
    });
  }

  async stop(): Promise<void> {
    this.probing?.stop();
    this.resolveReady();
    await Promise.all([this.policies?.stop(), this.nodes?.stop()]);
  }

  /** The ClusterNetworkPolicies as kept (none while the CRD is not installed). */
  clusterPolicies(): KubeObject[] {
    return this.policies?.list() ?? [];
  }

  nodeList(): PolicyNode[] {
    return this.nodes?.list() ?? [];
  }

  private startCaches(): void {
    const { transport, logger, watchdogMs, retryMs, nodePeers } = this.options;
    logger.info('ClusterNetworkPolicy CRD is installed: watching ClusterNetworkPolicies and nodes');
    const policies = new Cache<KubeObject>({
      source: resourceListWatch(transport, CLUSTER_NETWORK_POLICIES),
      schema: CachedClusterNetworkPolicy,
      name: 'policy-clusternetworkpolicies',
      logger,
      ...(watchdogMs ? { watchdogMs } : {}),
    });
    const nodes = new PolicyNodes({
      transport,
      logger,
      ...(watchdogMs ? { watchdogMs } : {}),
      ...(retryMs ? { retryMs } : {}),
      ...(nodePeers ? { nodePeers } : {}),
    });
    const trigger = () => this.onChange();
    const sameVersion = (a: KubeObject, b: KubeObject) =>
      a === b || a.metadata.resourceVersion === b.metadata.resourceVersion;
    policies.addHandler(
      {
        onAdd: trigger,
        onDelete: trigger,
        onUpdate: (a, b) => void (sameVersion(a, b) || trigger()),
      },
      { replay: false },
    );
    this.policies = policies;
    this.nodes = nodes;
    policies.start();
    nodes.start(trigger);
    void Promise.all([policies.synced, nodes.synced]).then(
      () => {
        this.resolveReady();
        trigger();
      },
      () => undefined, // stopped before sync
    );
  }
}
