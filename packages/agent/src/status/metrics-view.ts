// The running agent as its scrape-time metrics read it (AgentView): BGP sessions and routes
// from the routing side, addresses from this node's allocator, the last NetworkPolicy result.
import type { AgentView } from '../core/metrics.js';
import { secondsSince } from '../core/metrics.js';
import type { NodeConfigTracker } from '../node/node-config.js';
import type { DropCounters, PolicyReconciler } from '../policy/index.js';
import type { NodeStatusReporter } from '../node-status/status-reporter.js';
import type { Routing } from '../routing/index.js';

interface ViewSources {
  drops?: Pick<DropCounters, 'read'>;
  routing: Pick<Routing, 'exportedRoutes' | 'birdState'>;
  nodeStatus: Pick<NodeStatusReporter, 'peerStatuses'>;
  nodeConfig: Pick<NodeConfigTracker, 'current'>;
  policy?: Pick<PolicyReconciler, 'lastResult'>;
  now?: () => number;
}

export function agentView(sources: ViewSources): AgentView {
  const now = sources.now ?? Date.now;
  return {
    peers: () =>
      sources.nodeStatus.peerStatuses().map((p) => {
        const sinceSeconds = secondsSince(p.since, now());
        return {
          address: p.address,
          state: p.state,
          ...(p.asn === undefined ? {} : { asn: p.asn }),
          ...(sinceSeconds === undefined ? {} : { sinceSeconds }),
          ...(p.routesExported === undefined ? {} : { routesExported: p.routesExported }),
        };
      }),
    routesExported: () => sources.routing.exportedRoutes,
    birdState: () => sources.routing.birdState.status,
    addresses: () => {
      const counts = sources.nodeConfig.current()?.allocator.counts();
      if (!counts) return [];
      return (['ipv6', 'ipv4'] as const).flatMap((family) => {
        const c = counts[family];
        return c
          ? [
              {
                family,
                used: c.allocated,
                free: Number(c.free),
                quarantined: c.quarantined,
                quarantineCut: c.quarantineCut,
              },
            ]
          : [];
      });
    },
    policy: () => sources.policy?.lastResult,
    ...(sources.drops ? { droppedPackets: () => sources.drops!.read() } : {}),
  };
}
