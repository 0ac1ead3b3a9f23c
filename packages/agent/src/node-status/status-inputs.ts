// What the NodeConfig status is computed from, read off the running parts: the NodeConfig as
// the cache holds it (and whether the agent can use it), the routing side (BIRD's state, the
// peers, the sessions, what is announced), the allocations and the agent's version.
import type { NodeConfigTracker } from '../node/node-config.js';
import { advertisedCount } from '../routing/announcements.js';
import type { Routing } from '../routing/routing.js';
import type { AllocationStore } from '../store/index.js';
import type { StatusInputs } from './status-compute.js';

interface StatusSources {
  nodeName: string;
  nodeConfig: Pick<NodeConfigTracker, 'cache' | 'current'>;
  routing: Pick<
    Routing,
    'birdState' | 'peers' | 'sessionObservation' | 'announcements' | 'birdModel'
  >;
  store: Pick<AllocationStore, 'entries'>;
  agentVersion?: string;
}

/** Undefined while this node has no NodeConfig object (nothing to write the status to). */
export function statusInputs(s: StatusSources): Omit<StatusInputs, 'policy'> | undefined {
  const object = s.nodeConfig.cache.getObject(s.nodeName);
  if (!object) return undefined;
  const model = s.routing.birdModel;
  const peers = s.routing.peers;
  return {
    ...(object.metadata.generation === undefined ? {} : { generation: object.metadata.generation }),
    ...(s.nodeConfig.current()
      ? {}
      : {
          unusable: "the agent cannot use this NodeConfig's address ranges; the agent log says why",
        }),
    announcer: s.routing.birdState,
    configuredPeers: object.spec.bgp.peers,
    peers: peers.peers,
    peerProblems: peers.problems,
    stalePasswords: peers.stale,
    bgp: s.routing.sessionObservation,
    entries: s.store.entries(),
    ipv4Node: { cidr4: object.spec.cidr4, ipv4: object.spec.ipv4, nat64: object.spec.nat64 },
    anycastAnnounced: s.routing.announcements?.anycast.size ?? 0,
    ...(model ? { advertisedRoutes: advertisedCount(model) } : {}),
    ...(s.agentVersion ? { agentVersion: s.agentVersion } : {}),
  };
}
