// The cluster-wide inputs of NetworkPolicy enforcement: every pod (peers are known by their
// addresses wherever they run), every namespace (namespaceSelector) and every NetworkPolicy.
// Pods and namespaces are validated and trimmed to what translate() reads once, as they enter
// the cache, so a change costs no re-parsing of 10,000 pods and the cache holds a fraction of
// each object. NetworkPolicies stay raw: an invalid one must not be skipped by the cache (that
// would silently allow what it denies) but reported and enforced fail-closed (see state.ts).
import type { Logger } from '@flock/api';
import {
  Cache,
  NAMESPACES,
  NETWORK_POLICIES,
  PODS,
  resourceListWatch,
  type KubeObject,
  type KubeTransport,
  type MetricsOptions,
} from '@flock/kube';
import { Namespace, Pod } from '@flock/netpol';
import type { z } from 'zod';
import { ClusterPolicyCaches } from './cluster-caches.js';

/** A pod as policy enforcement sees it: identity, labels, named ports, phase and addresses. */
export const PolicyPod = Pod.transform((p) => ({
  metadata: {
    name: p.metadata.name,
    namespace: p.metadata.namespace,
    ...(p.metadata.uid ? { uid: p.metadata.uid } : {}),
    ...(p.metadata.labels ? { labels: p.metadata.labels } : {}),
  },
  spec: {
    // The pod uses the node's addresses: not a pod peer (see docs).
    ...((p.spec as { hostNetwork?: unknown } | null | undefined)?.hostNetwork === true
      ? { hostNetwork: true }
      : {}),
    containers: (p.spec?.containers ?? []).map((c) => ({
      ports: (c.ports ?? []).map((port) => ({
        ...(port.name ? { name: port.name } : {}),
        containerPort: port.containerPort,
        ...(port.protocol ? { protocol: port.protocol } : {}),
      })),
    })),
  },
  status: {
    ...(p.status?.phase ? { phase: p.status.phase } : {}),
    ...(p.status?.podIP ? { podIP: p.status.podIP } : {}),
    ...(p.status?.podIPs ? { podIPs: p.status.podIPs.map((i) => ({ ip: i.ip })) } : {}),
  },
}));
export type PolicyPod = z.output<typeof PolicyPod>;

/** A namespace: its name and labels. */
export const PolicyNamespace = Namespace.transform((ns) => ({
  metadata: {
    name: ns.metadata.name,
    ...(ns.metadata.labels ? { labels: ns.metadata.labels } : {}),
  },
}));
export type PolicyNamespace = z.output<typeof PolicyNamespace>;

export interface PolicyCaches {
  pods: Cache<PolicyPod>;
  namespaces: Cache<PolicyNamespace>;
  /** Raw objects: validated by the reconciler, which reports what it cannot enforce. */
  policies: Cache<KubeObject>;
  /** ClusterNetworkPolicies and Nodes, when their CRD is installed (absent: not enforced). */
  cluster?: ClusterPolicyCaches;
}

export function policyCaches(
  transport: KubeTransport,
  logger: Logger,
  metrics?: MetricsOptions,
  /** Restart a watch that delivered nothing for this long (the agent's --watchdog). */
  watchdogMs?: number,
  /** How often to look for the ClusterNetworkPolicy CRD while it is not installed. */
  recheckMs?: number,
): PolicyCaches {
  const common = {
    logger,
    ...(metrics ? { metrics } : {}),
    ...(watchdogMs ? { watchdogMs } : {}),
  };
  return {
    pods: new Cache<PolicyPod>({
      source: resourceListWatch(transport, PODS),
      schema: PolicyPod,
      name: 'policy-pods',
      ...common,
    }),
    namespaces: new Cache<PolicyNamespace>({
      source: resourceListWatch(transport, NAMESPACES),
      schema: PolicyNamespace,
      name: 'policy-namespaces',
      ...common,
    }),
    policies: new Cache<KubeObject>({
      source: resourceListWatch(transport, NETWORK_POLICIES),
      name: 'policy-networkpolicies',
      ...common,
    }),
    cluster: new ClusterPolicyCaches({
      transport,
      logger,
      ...(watchdogMs ? { watchdogMs } : {}),
      ...(recheckMs ? { recheckMs } : {}),
    }),
  };
}
