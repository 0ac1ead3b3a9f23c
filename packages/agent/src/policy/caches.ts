// The cluster-wide inputs of NetworkPolicy enforcement: every pod (peers are known by their
// addresses wherever they run), every namespace (namespaceSelector) and every NetworkPolicy.
// Pods are the agent's one pod cache (pods.ts) or, with --policy-peers=peer-slices, this node's
// pods and the PeerSlices (slice-peers.ts), shared with the node side, which starts and stops them. Namespaces are validated and trimmed to what translate() reads once, as they enter
// the cache. NetworkPolicies are kept as identity and spec (trim-policy.ts), never skipped: an
// invalid or over-size one must not be dropped by the cache (that would silently allow what it
// denies) but reported and enforced fail-closed (validate.ts, state.ts).
import { ANYCAST_ANNOTATION, isPodReady, type Logger, type Pod } from '@flock/api';
import {
  Cache,
  NAMESPACES,
  type CacheHandler,
  NETWORK_POLICIES,
  resourceListWatch,
  type KubeObject,
  type KubeTransport,
  type MetricsOptions,
} from '@flock/kube';
import { Namespace } from '@flock/netpol';
import type { z } from 'zod';
import { ClusterPolicyCaches } from './cluster-caches.js';
import { CachedNetworkPolicy } from './trim-policy.js';

/**
 * The part of a pod policy enforcement reads: a change elsewhere (annotations) is none. Ready
 * counts only for an anycast pod: its anycast addresses are its sources only while it is Ready.
 */
function policyView(p: Pod): unknown {
  return [
    p.metadata.uid,
    p.metadata.labels,
    p.spec?.hostNetwork,
    p.spec?.containers,
    p.status?.phase,
    p.status?.podIP,
    p.status?.podIPs,
    p.metadata.annotations?.[ANYCAST_ANNOTATION] === undefined
      ? undefined
      : [isPodReady(p), p.metadata.deletionTimestamp !== undefined],
  ];
}

/** Do two states of a pod mean the same to policy enforcement? */
export function samePolicyPod(a: Pod, b: Pod): boolean {
  return a === b || JSON.stringify(policyView(a)) === JSON.stringify(policyView(b));
}

/** A namespace: its name and labels. */
export const PolicyNamespace = Namespace.transform((ns) => ({
  metadata: {
    name: ns.metadata.name,
    ...(ns.metadata.labels ? { labels: ns.metadata.labels } : {}),
  },
}));
export type PolicyNamespace = z.output<typeof PolicyNamespace>;

/** What policy reads of its peer pods: a pod cache has it, and so has SlicePeers. */
export interface PolicyPods {
  readonly synced: Promise<void>;
  list(): Pod[];
  getObject(name: string, namespace?: string): Pod | undefined;
  addHandler(handler: CacheHandler<Pod>, options?: { replay?: boolean }): () => void;
}

export interface PolicyCaches {
  /**
   * Peer pods: the cluster-wide pod cache or SlicePeers (this node's pods and the published
   * slices), shared with the node side: started and stopped by its owner, not the reconciler.
   */
  pods: PolicyPods;
  namespaces: Cache<PolicyNamespace>;
  /** Identity and spec: validated by the reconciler, which reports what it cannot enforce. */
  policies: Cache<KubeObject>;
  /** ClusterNetworkPolicies and Nodes, when their CRD is installed (absent: not enforced). */
  cluster?: ClusterPolicyCaches;
}

export interface PolicyCachesOptions {
  metrics?: MetricsOptions;
  /** Restart a watch that delivered nothing for this long (the agent's --watchdog). */
  watchdogMs?: number;
  /** How often to look for the ClusterNetworkPolicy CRD while it is not installed. */
  recheckMs?: number;
  /** `nodes` peers from the operator's NodePeers (--policy-peers=peer-slices), this node's name. */
  nodePeers?: { nodeName: string };
}

export function policyCaches(
  transport: KubeTransport,
  /** The agent's cluster-wide pod cache (clusterPodCache), or SlicePeers. */
  pods: PolicyPods,
  logger: Logger,
  options: PolicyCachesOptions = {},
): PolicyCaches {
  const { metrics, watchdogMs, recheckMs, nodePeers } = options;
  const common = {
    logger,
    ...(metrics ? { metrics } : {}),
    ...(watchdogMs ? { watchdogMs } : {}),
  };
  return {
    pods,
    namespaces: new Cache<PolicyNamespace>({
      source: resourceListWatch(transport, NAMESPACES),
      schema: PolicyNamespace,
      name: 'policy-namespaces',
      ...common,
    }),
    policies: new Cache<KubeObject>({
      source: resourceListWatch(transport, NETWORK_POLICIES),
      schema: CachedNetworkPolicy,
      name: 'policy-networkpolicies',
      ...common,
    }),
    cluster: new ClusterPolicyCaches({
      transport,
      logger,
      ...(watchdogMs ? { watchdogMs } : {}),
      ...(recheckMs ? { recheckMs } : {}),
      ...(nodePeers ? { nodePeers } : {}),
    }),
  };
}
