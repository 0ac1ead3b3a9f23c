// The arms of the fan-out benchmark: what one agent watches, built in a watcher process. Each
// arm is run at every size in one run and printed side by side (run.ts): `pods` (every agent
// watches every Pod and Node: --policy-peers=pods), `peer-slices` (own-node pods, the operator's
// PeerSlices and NodePeers, whose publisher run.ts starts beside the cluster),
// `peer-slices-nodes` (PeerSlices, but every Node watched whole, as before NodePeers) and
// `peer-relay` (the agent with --peer-relay: the PeerSlices' records from a peer relay, which
// run.ts starts beside the publisher) and `peer-relay-eager` (the same, the relay writing each
// change to each agent at once, --coalesce=0: the side-by-side arm for the coalescing).
import type { Logger } from '@flock/api';
import { claimCache } from '../../src/claims/cache.js';
import type { AgentConfig } from '../../src/core/config.js';
import { NetworkConditionKeeper } from '../../src/node-status/node-condition.js';
import { NodeConfigTracker } from '../../src/node/node-config.js';
import { PeerRanges, podSources, policyCaches } from '../../src/policy/index.js';
import type { PodSourcesOptions } from '../../src/policy/peer-source.js';
import { httpsRelay } from '../../src/policy/relay-client.js';
import { endpointSliceCache, serviceCache } from '../../src/routing/service-addresses.js';
import type { CountingTransport } from './counting-transport.js';
import { countingRelay } from './counting-relay.js';

/** The peer relay as the bench deploys it: its Service (an EndpointSlice) and who may read. */
export const RELAY = {
  namespace: 'flock-system',
  service: 'flock-peer-relay',
  serviceAccount: 'flock-agent',
} as const;

/** What a watcher needs to reach the relay (files run.ts writes). */
export interface RelayFiles {
  /** The CA that signed the relay's serving certificate (PEM). */
  caFile: string;
  /** The agents' service account token. */
  tokenFile: string;
}

/** One agent's watches, started. */
export interface Watches {
  /** Every watch has synced (its first complete list). */
  synced: Promise<unknown>;
  stop(): Promise<void>;
}

export interface Design {
  name: string;
  /** The operator's PeerSlice publisher runs beside the cluster (run.ts starts it). */
  publisher?: boolean;
  /** A peer relay runs beside the publisher (run.ts starts it and gives the watchers `relay`). */
  relay?: boolean;
  /** The relay's --coalesce in ms (default: the relay's own). */
  relayCoalesceMs?: number;
  /**
   * Which churn writes reach an agent: all, or only the label changes (a status write changes
   * nothing policy reads of a pod: a PeerSlice watcher never sees it, by design).
   */
  sees: 'all' | 'labels';
  /** Start the watches of the agent of `config.nodeName` (in its own process). */
  start(
    transport: CountingTransport,
    config: AgentConfig,
    logger: Logger,
    relay: RelayFiles | undefined,
  ): Watches;
}

/**
 * The agent with --policy-peers=pods (agent.ts buildAgent), its watches alone: built by the
 * agent's own factories with the agent's defaults, started as its start-up starts them.
 * Cluster-wide: every Pod,
 * Namespace, NetworkPolicy, NodeConfig (PeerRanges), AddressClaim, Service and EndpointSlice,
 * and with the ClusterNetworkPolicy CRD every ClusterNetworkPolicy and Node; of its own node
 * only: the NodeConfig and the Node. No policy pass, no routing: only what the API server sees.
 */
const podsDesign: Design = {
  name: 'pods',
  sees: 'all',
  start: (transport, config, logger) => agentWatches(transport, config, logger, 'pods'),
};

/**
 * The agent with PeerSlices (--policy-peers=peer-slices, the default): its own node's pods and
 * the slices the operator's publisher writes, instead of every Pod; the rest as `pods`.
 */
const peerSlices: Design = {
  name: 'peer-slices',
  publisher: true,
  sees: 'labels',
  start: (transport, config, logger) => agentWatches(transport, config, logger, 'peer-slices'),
};

/** PeerSlices with every Node watched whole (no NodePeers): the side-by-side arm for NodePeers. */
const peerSlicesNodes: Design = {
  name: 'peer-slices-nodes',
  publisher: true,
  sees: 'labels',
  start: (transport, config, logger) =>
    agentWatches(transport, config, logger, 'peer-slices', false),
};

/**
 * The agent with a peer relay (--peer-relay flock-system/flock-peer-relay): as `peer-slices`,
 * but the records come from the relay's stream, whose lines are counted as the watch
 * "peer-relay" (counting-relay.ts); the PeerSlices are listed and watched only when the agent
 * falls back (slice-peers.ts: `peerslices` in its figures says it did).
 */
const peerRelay: Design = {
  name: 'peer-relay',
  publisher: true,
  relay: true,
  sees: 'labels',
  start: (transport, config, logger, relay) => {
    if (!relay) throw new Error('the peer-relay design needs the relay files (--relay-ca, ...)');
    return agentWatches(transport, config, logger, 'peer-slices', true, {
      namespace: RELAY.namespace,
      service: RELAY.service,
      caFile: relay.caFile,
      tokenFile: relay.tokenFile,
      // The EndpointSlice's address stands for the relay on loopback (relay-setup.ts).
      open: (target) => countingRelay(httpsRelay({ ...target, host: '127.0.0.1' }), transport),
    });
  },
};

/** The relay as before its changes were gathered: each written to each agent at once. */
const peerRelayEager: Design = { ...peerRelay, name: 'peer-relay-eager', relayCoalesceMs: 0 };

/** The agent's watches (agent.ts buildAgent) with its peers from `policyPeers`. */
function agentWatches(
  transport: CountingTransport,
  config: AgentConfig,
  logger: Logger,
  policyPeers: AgentConfig['policyPeers'],
  nodePeers = policyPeers === 'peer-slices',
  relay?: PodSourcesOptions['relay'],
): Watches {
  const { nodeName, watchdogMs } = config;
  const source = podSources({
    policyPeers,
    transport,
    logger,
    nodeName,
    watchdogMs,
    ...(relay ? { relay } : {}),
  });
  const { pods } = source;
  const policy = policyCaches(transport, source.peers, logger, {
    watchdogMs,
    ...(nodePeers ? { nodePeers: { nodeName } } : {}),
  });
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
  const node = new NetworkConditionKeeper(transport, nodeName, logger, config.resyncMs, watchdogMs);
  nodeConfig.start();
  pods.start();
  claims.start();
  services.start();
  slices.start();
  node.start();
  for (const c of source.components) void c.start();
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
      source.peers.synced,
    ]),
    async stop() {
      offRanges();
      await Promise.all([
        ...caches.map((c) => c.stop()),
        nodeConfig.stop(),
        node.stop(),
        peerRanges.stop(),
        policy.cluster?.stop(),
        ...source.components.map((c) => c.stop?.()),
      ]);
    },
  };
}

export const DESIGNS: ReadonlyMap<string, Design> = new Map(
  [podsDesign, peerSlices, peerSlicesNodes, peerRelay, peerRelayEager].map((d) => [d.name, d]),
);

export function designNamed(name: string): Design {
  const design = DESIGNS.get(name);
  if (!design) throw new Error(`no design ${name}; there are: ${[...DESIGNS.keys()].join(', ')}`);
  return design;
}
