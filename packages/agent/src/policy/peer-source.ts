// Where the agent's pods come from, as --policy-peers says: with `peer-slices` a watch of this
// node's pods alone and the operator's PeerSlices for the peers on other nodes; with `pods` one
// cache of every pod of the cluster, which is both (this node's pods its by-node view).
import type { Logger, Pod } from '@flock/api';
import type { Cache, KubeTransport, MetricsOptions } from '@flock/kube';
import type { Component } from '../core/lifecycle.js';
import { clusterPodCache, ownPodCache } from '../node/pods.js';
import type { PolicyPods } from './caches.js';
import { SlicePeers, type SlicePeersOptions } from './slice-peers.js';

export interface PodSourcesOptions {
  policyPeers: 'peer-slices' | 'pods';
  /** Peer records from a peer relay (with 'peer-slices'). */
  relay?: SlicePeersOptions['relay'];
  transport: KubeTransport;
  logger: Logger;
  nodeName: string;
  watchdogMs?: number;
  metrics?: MetricsOptions;
}

export interface PodSources {
  /** The pod cache (indexed by node: BY_NODE), started by its owner. */
  pods: Cache<Pod>;
  /** NetworkPolicy's peer pods. */
  peers: PolicyPods;
  /** What starts and stops the peers' own watches (none when they are the pod cache). */
  components: Component[];
}

export function podSources(o: PodSourcesOptions): PodSources {
  const { transport, logger, nodeName, watchdogMs, metrics } = o;
  if (o.policyPeers === 'pods') {
    const pods = clusterPodCache(transport, logger, watchdogMs, metrics, nodeName);
    return { pods, peers: pods, components: [] };
  }
  const pods = ownPodCache(transport, logger, nodeName, watchdogMs, metrics);
  const peers = new SlicePeers({
    own: pods,
    nodeName,
    transport,
    logger,
    ...(metrics ? { metrics } : {}),
    ...(watchdogMs ? { watchdogMs } : {}),
    ...(o.relay ? { relay: o.relay } : {}),
  });
  return {
    pods,
    peers,
    components: [
      {
        name: 'NetworkPolicy peers',
        // In the background: the policy reconciler waits for their sync (bounded).
        start: () => void peers.start(),
        stop: () => peers.stop(),
      },
    ],
  };
}
