// What `flock-agent status` shows, as one JSON document: the BGP sessions, what BIRD exports,
// this node's allocations, the pinned and anycast addresses announced, NetworkPolicy. The agent
// builds it from its running parts; the command validates what it reads with the same schema.
import { PodIpv4Mode, podIpv4Mode } from '@flock/api';
import { z } from 'zod';
import type { AllocationEntry } from '../store/index.js';
import { secondsSince } from '../core/metrics.js';
import type { NodeConfigTracker } from '../node/node-config.js';
import type { PolicyReconciler } from '../policy/index.js';
import type { ClaimKeeper } from '../claims/keeper.js';
import type { NodeStatusReporter } from '../node-status/status-reporter.js';
import type { Routing } from '../routing/index.js';
import { translatedRange, type InterNodeTranslator } from '../nat64/siit.js';
import type { Nat64Translator } from '../nat64/tayga.js';

const Peer = z.object({
  address: z.string(),
  asn: z.int().optional(),
  protocol: z.string().optional(),
  state: z.string(),
  since: z.string().optional(),
  uptimeSeconds: z.number().min(0).optional(),
  routesExported: z.int().min(0).optional(),
  info: z.string().optional(),
});

const Family = z.object({
  family: z.enum(['ipv6', 'ipv4']),
  prefix: z.string(),
  used: z.int().min(0),
  free: z.number().min(0),
  quarantined: z.int().min(0),
});

const Allocation = z.object({
  namespace: z.string(),
  pod: z.string(),
  containerID: z.string(),
  ip6: z.string(),
  ip4: z.string().optional(),
  ipv4Mode: PodIpv4Mode,
  pinned: z.boolean(),
  anycast: z.array(z.string()),
  state: z.enum(['pending', 'committed']),
});

export const AgentStatus = z.object({
  node: z.string(),
  version: z.string().optional(),
  ready: z.boolean(),
  bird: z.object({ state: z.string(), message: z.string().optional() }),
  peers: z.array(Peer),
  routesExported: z
    .object({ aggregate: z.int(), pinned: z.int(), anycast: z.int(), services: z.int().optional() })
    .optional()
    .describe('Routes in the config BIRD accepted; absent before it accepted one.'),
  announced: z.object({
    aggregates: z.array(z.string()),
    pinned: z.array(z.string()).describe('Host routes: pinned addresses (and foreign ones).'),
    anycast: z.array(z.object({ address: z.string(), veths: z.array(z.string()) })),
    services: z
      .array(z.object({ address: z.string(), service: z.string(), why: z.string() }))
      .optional()
      .describe('Service (LoadBalancer) addresses this node announces, and why.'),
  }),
  addresses: z.array(Family),
  allocations: z.array(Allocation),
  claimConflicts: z
    .array(
      z.object({ address: z.string(), namespace: z.string(), pod: z.string(), why: z.string() }),
    )
    .optional()
    .describe(
      'Floating addresses local pods ask for but do not hold: neither announced nor sourced.',
    ),
  policy: z.object({
    enforced: z.boolean(),
    ok: z.boolean().optional(),
    reason: z.string().optional(),
    message: z.string().optional(),
    rules: z.int().optional(),
    pods: z.int().optional(),
    passes: z.int().min(0),
  }),
  nat64: z
    .object({
      prefix: z.string(),
      pool: z.string(),
      running: z.boolean(),
      restarts: z.int().min(0),
    })
    .optional()
    .describe("The node's NAT64 translator (Tayga), when its NodeConfig has nat64."),
  interNode: z
    .object({
      prefix: z.string(),
      announced: z.string(),
      running: z.boolean(),
      restarts: z.int().min(0),
    })
    .optional()
    .describe(
      "The translator of a Private pool's IPv4 between nodes (Tayga): the prefix, this node's part of it (announced), and its state.",
    ),
});
export type AgentStatus = z.infer<typeof AgentStatus>;

export interface StatusSources {
  node: string;
  version?: string;
  ready: () => boolean;
  routing: Pick<Routing, 'exportedRoutes' | 'birdState' | 'announcements'>;
  /** Each configured peer as BIRD last reported it. */
  nodeStatus: Pick<NodeStatusReporter, 'peerStatuses'>;
  nodeConfig: Pick<NodeConfigTracker, 'current'>;
  store: { entries(): AllocationEntry[] };
  policy?: Pick<PolicyReconciler, 'lastResult' | 'passes'>;
  claims?: Pick<ClaimKeeper, 'conflicts'>;
  nat64?: Pick<Nat64Translator, 'status'>;
  interNode?: Pick<InterNodeTranslator, 'status'>;
  now?: () => number;
}

export function agentStatus(s: StatusSources): AgentStatus {
  const now = s.now?.() ?? Date.now();
  const bird = s.routing.birdState;
  const plan = s.routing.announcements;
  const counts = s.nodeConfig.current()?.allocator.counts();
  const spec = s.nodeConfig.current()?.nodeConfig.spec;
  const policy = s.policy?.lastResult;
  const exported = s.routing.exportedRoutes;
  const nat64 = s.nat64?.status();
  const interNode = s.interNode?.status();
  return {
    node: s.node,
    ...(s.version ? { version: s.version } : {}),
    ready: s.ready(),
    bird: { state: bird.status, ...('message' in bird ? { message: bird.message } : {}) },
    peers: s.nodeStatus.peerStatuses().map((p) => {
      const up = p.state === 'Established' ? secondsSince(p.since, now) : undefined;
      return { ...p, ...(up === undefined ? {} : { uptimeSeconds: Math.round(up) }) };
    }),
    ...(exported ? { routesExported: { ...exported } } : {}),
    announced: {
      aggregates: plan?.aggregates ?? [],
      pinned: plan?.hostRoutes ?? [],
      anycast: [...(plan?.anycast ?? new Map<string, string[]>())].map(([address, veths]) => ({
        address,
        veths,
      })),
      ...(plan?.services.size
        ? { services: [...plan.services].map(([address, a]) => ({ address, ...a })) }
        : {}),
    },
    addresses: (['ipv6', 'ipv4'] as const).flatMap((family) => {
      const c = counts?.[family];
      return c
        ? [
            {
              family,
              prefix: c.prefix,
              used: c.allocated,
              free: Number(c.free),
              quarantined: c.quarantined,
            },
          ]
        : [];
    }),
    allocations: s.store.entries().map((e) => ({
      namespace: e.namespace,
      pod: e.pod,
      containerID: e.containerID,
      ip6: e.ip6,
      ...(e.ip4 ? { ip4: e.ip4 } : {}),
      ipv4Mode: podIpv4Mode(e, spec ?? {}),
      pinned: e.pinned,
      anycast: e.anycast,
      state: e.state,
    })),
    ...(s.claims?.conflicts().length ? { claimConflicts: [...s.claims.conflicts()] } : {}),
    policy: {
      enforced: s.policy !== undefined,
      ...(policy
        ? {
            ok: policy.ok,
            reason: policy.reason,
            message: policy.message,
            ...(policy.rules === undefined ? {} : { rules: policy.rules }),
            ...(policy.pods === undefined ? {} : { pods: policy.pods }),
          }
        : {}),
      passes: s.policy?.passes ?? 0,
    },
    ...(nat64?.want
      ? {
          nat64: {
            prefix: nat64.want.prefix,
            pool: nat64.want.pool,
            running: nat64.running,
            restarts: nat64.restarts,
          },
        }
      : {}),
    ...(interNode?.want
      ? {
          interNode: {
            prefix: interNode.want.prefix,
            announced: translatedRange(interNode.want.prefix, interNode.want.slice),
            running: interNode.running,
            restarts: interNode.restarts,
          },
        }
      : {}),
  };
}
