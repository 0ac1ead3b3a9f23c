// The agent's NetworkPolicy reconciler as startAgent wires it: its caches (peers from the pod
// source the agent chose), the peer ranges, SNAT and floating-address sources from the
// NodeConfig and the claims, warnings as Events.
import type { AddressClaim, Logger } from '@flock/api';
import type { Cache, EventRecorder, KubeTransport } from '@flock/kube';
import { usableSources, type ClaimOf } from '../claims/ownership.js';
import type { AgentConfig } from '../core/config.js';
import type { AgentMetrics } from '../core/metrics.js';
import type { NodeConfigTracker } from '../node/node-config.js';
import type { PodLookup } from '../node/pods.js';
import type { AllocationStore } from '../store/index.js';
import { policyCaches, type PolicyPods } from './caches.js';
import { policyWarnings } from './events.js';
import type { PolicyApplier } from './nft.js';
import { PeerRanges } from './peer-ranges.js';
import { PolicyReconciler } from './reconciler.js';
import { nodeSnat } from './snat.js';

export interface AgentPolicyParts {
  config: Pick<
    AgentConfig,
    | 'nodeName'
    | 'policyPeers'
    | 'watchdogMs'
    | 'peerPodRanges'
    | 'resyncMs'
    | 'logDeniedPerSecond'
    | 'healthPort'
  >;
  transport: KubeTransport;
  applier: PolicyApplier;
  /** NetworkPolicy's peer pods (podSources). */
  peers: PolicyPods;
  store: AllocationStore;
  pods: PodLookup;
  nodeConfig: NodeConfigTracker;
  claims: Cache<AddressClaim>;
  claimOf: ClaimOf;
  events: Pick<EventRecorder, 'event'>;
  metrics: AgentMetrics;
  logger: Logger;
}

export function agentPolicy(o: AgentPolicyParts): PolicyReconciler {
  const { config, transport, metrics, logger, nodeConfig } = o;
  return new PolicyReconciler({
    caches: policyCaches(transport, o.peers, logger, {
      metrics: metrics.options,
      watchdogMs: config.watchdogMs,
      ...(config.policyPeers === 'peer-slices' ? { nodePeers: { nodeName: config.nodeName } } : {}),
    }),
    metrics,
    store: o.store,
    pods: o.pods,
    // Peers' addresses count only inside their node's ranges (a node writes its pods' podIPs).
    peerRanges: new PeerRanges({
      transport,
      logger,
      metrics: metrics.options,
      watchdogMs: config.watchdogMs,
      otherRanges: config.peerPodRanges,
    }),
    applier: o.applier,
    logger,
    resyncMs: config.resyncMs,
    logDroppedPerSecond: config.logDeniedPerSecond,
    snat: () => nodeSnat(nodeConfig.current()?.nodeConfig.spec),
    ...(config.healthPort ? { nodePortsClosedToPods: [config.healthPort] } : {}),
    warn: policyWarnings(o.events),
    floating: {
      claims: o.claims,
      sourcesOf: (entry, pod) =>
        usableSources(
          o.claimOf,
          entry,
          pod,
          nodeConfig.current()?.nodeConfig.spec.pinnedCIDRs ?? [],
        ),
    },
  });
}
