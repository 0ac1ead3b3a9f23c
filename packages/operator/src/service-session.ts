// The Service address controller of one leadership session: its reconciler, the work queue
// that runs it and the cache handlers that feed it, started together and stopped together.
import type { Pool, Service } from '@flock/api';
import {
  Controller,
  type Cache,
  type EventInput,
  type EventSubject,
  type KubeObject,
  type KubeTransport,
  type Logger,
  type MetricsOptions,
} from '@flock/kube';
import type { Limiter } from './limiter.js';
import type { OperatorMetrics } from './metrics.js';
import { isRefused, overlapReports, withdrawnLists } from './overlaps.js';
import { ClaimWriter, type ClaimView } from './service-claims.js';
import { ServiceController } from './service-controller.js';
import { wirePoolClaimHandlers, wireServiceHandlers } from './service-handlers.js';
import type { Namespace } from './service-scope.js';

export interface ServiceSessionOptions {
  transport: KubeTransport;
  services: Cache<Service>;
  namespaces: Cache<Namespace>;
  poolCache: Cache<Pool>;
  /** Every Pool, with the operator's own fresher writes. */
  pools: () => Pool[];
  claims: Cache<KubeObject>;
  view: ClaimView;
  /** The pools controller: their status counts Service addresses and waiting Services. */
  poolsController: Controller;
  events: { event(subject: EventSubject, input: EventInput): Promise<void> };
  eventWrites: Limiter;
  logger: Logger;
  metrics: OperatorMetrics;
  metricsOptions: MetricsOptions;
  workers: number;
  serveUnsetClass: boolean;
  quarantineMs: number;
}

export interface ServiceSession {
  readonly controller: ServiceController;
  /** The Services (namespace/name) waiting for an address of `pool`. */
  waiting(pool: string): string[];
  stop(): Promise<void>;
}

/** Pools whose Service ranges may be handed out: not refused, their list not withdrawn. */
function usablePools(pools: readonly Pool[]): Set<string> {
  const out = new Set<string>();
  for (const [name, r] of overlapReports(pools))
    if (!isRefused(r) && !withdrawnLists(r).has('services')) out.add(name);
  return out;
}

export function startServiceSession(o: ServiceSessionOptions): ServiceSession {
  const controller = new ServiceController({
    transport: o.transport,
    services: o.services,
    namespaces: o.namespaces,
    pools: o.pools,
    usablePools: () => usablePools(o.pools()),
    claims: o.view,
    writer: new ClaimWriter(o.transport, o.view, o.metrics),
    events: o.events,
    eventWrites: o.eventWrites,
    logger: o.logger,
    metrics: o.metrics,
    serveUnsetClass: o.serveUnsetClass,
    quarantineMs: o.quarantineMs,
    onWaiting: (pools) => pools.forEach((p) => o.poolsController.enqueue(p)),
  });
  const runner = new Controller({
    name: 'services',
    workers: o.workers,
    logger: o.logger,
    metrics: o.metricsOptions,
    reconcile: (key, ctx) => controller.reconcile(key, ctx),
  });
  const offs = [
    wireServiceHandlers({
      services: o.services,
      namespaces: o.namespaces,
      pools: o.poolCache,
      claims: o.claims,
      controller: runner,
      waiting: () => controller.waiting.keys(),
    }),
    wirePoolClaimHandlers(o.pools, o.claims, o.poolsController),
  ];
  runner.start();
  return {
    controller,
    waiting: (pool) =>
      [...controller.waiting].filter(([, pools]) => pools.includes(pool)).map(([key]) => key),
    async stop() {
      offs.forEach((off) => off());
      await runner.stop();
    },
  };
}
