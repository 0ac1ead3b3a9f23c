// The arms of the fan-out benchmark: what one agent watches, built in a watcher process. Each
// arm is run at every size in one run and printed side by side (run.ts). A later arm (own-node
// pods, a compact remote-pod view, a watch tier) adds an entry here; if it needs something on
// the cluster side (a publisher, a tier of replicas) that goes beside it, started by run.ts.
import type { Logger } from '@flock/api';
import type { KubeTransport } from '@flock/kube';
import { claimCache } from '../../src/claims/cache.js';
import type { AgentConfig } from '../../src/core/config.js';
import { NetworkConditionKeeper } from '../../src/node-status/node-condition.js';
import { NodeConfigTracker } from '../../src/node/node-config.js';
import { clusterPodCache } from '../../src/node/pods.js';
import { PeerRanges, policyCaches } from '../../src/policy/index.js';
import { endpointSliceCache, serviceCache } from '../../src/routing/service-addresses.js';

/** One agent's watches, started. */
export interface Watches {
  /** Every watch has synced (its first complete list). */
  synced: Promise<unknown>;
  stop(): Promise<void>;
}

export interface Design {
  name: string;
  /** Start the watches of the agent of `config.nodeName` (in its own process). */
  start(transport: KubeTransport, config: AgentConfig, logger: Logger): Watches;
}

/**
 * Today's agent (agent.ts buildAgent), its watches alone: built by the agent's own factories
 * with the agent's defaults, started as its start-up starts them. Cluster-wide: every Pod,
 * Namespace, NetworkPolicy, NodeConfig (PeerRanges), AddressClaim, Service and EndpointSlice,
 * and with the ClusterNetworkPolicy CRD every ClusterNetworkPolicy and Node; of its own node
 * only: the NodeConfig and the Node. No policy pass, no routing: only what the API server sees.
 */
const today: Design = {
  name: 'today',
  start(transport, config, logger) {
    const { nodeName, watchdogMs } = config;
    const pods = clusterPodCache(transport, logger, watchdogMs, undefined, nodeName);
    const policy = policyCaches(transport, pods, logger, undefined, watchdogMs);
    const peerRanges = new PeerRanges({ transport, logger, watchdogMs });
    const nodeConfig = new NodeConfigTracker({
      transport,
      nodeName,
      logger,
      addressQuarantineMs: config.addressQuarantineMs,
      watchdogMs,
    });
    const claims = claimCache(transport, logger, watchdogMs);
    const services = serviceCache(transport, logger, watchdogMs);
    const slices = endpointSliceCache(transport, nodeName, logger, watchdogMs);
    // The Node carries NetworkUnavailable=False already (objects.ts): its loop writes nothing.
    const node = new NetworkConditionKeeper(
      transport,
      nodeName,
      logger,
      config.resyncMs,
      watchdogMs,
    );
    nodeConfig.start();
    pods.start();
    claims.start();
    services.start();
    slices.start();
    node.start();
    // What PolicyReconciler.start() starts, with nothing to trigger.
    const nothing = () => undefined;
    policy.namespaces.start();
    policy.policies.start();
    policy.cluster?.start(nothing);
    const offRanges = peerRanges.start(nothing);
    const caches = [pods, policy.namespaces, policy.policies, claims, services, slices];
    return {
      synced: Promise.all([
        ...caches.map((c) => c.synced),
        nodeConfig.cache.synced,
        node.node.synced,
        peerRanges.synced,
        policy.cluster?.ready,
      ]),
      async stop() {
        offRanges();
        await Promise.all([
          ...caches.map((c) => c.stop()),
          nodeConfig.stop(),
          node.stop(),
          peerRanges.stop(),
          policy.cluster?.stop(),
        ]);
      },
    };
  },
};

export const DESIGNS: ReadonlyMap<string, Design> = new Map([[today.name, today]]);

export function designNamed(name: string): Design {
  const design = DESIGNS.get(name);
  if (!design) throw new Error(`no design ${name}; there are: ${[...DESIGNS.keys()].join(', ')}`);
  return design;
}
