// startOperator: the caches (on leaders and standbys alike, so a new leader starts warm),
// leader election on a Lease, and — while leading — a controller that reconciles Pools, the
// claim GC and the Service address controller.
// Health (/healthz, /readyz) and Prometheus metrics are served on one port.
import { NodeConfig, OPERATOR_FIELD_MANAGER, Pool, Service } from '@flock/api';
import { DEFAULT_PREFIX_QUARANTINE_MS } from '@flock/ipam';
import {
  ADDRESSCLAIMS,
  Cache,
  Controller,
  EventRecorder,
  kubeLeaseStore,
  LeaderElector,
  LoopMetrics,
  NAMESPACES,
  NODECONFIGS,
  NODES,
  POOLS,
  resourceListWatch,
  SERVICES,
  sleep,
  startHealthServer,
  type HealthServer,
  type KubeObject,
  type MetricsOptions,
} from '@flock/kube';
import { Registry } from 'prom-client';
import { ClaimGc } from './claim-gc.js';
import { ClusterPolicyStatus } from './cluster-policy-status.js';
import { wireHandlers } from './handlers.js';
import { Limiter } from './limiter.js';
import { METRICS_PREFIX, OperatorMetrics } from './metrics.js';
import { DEFAULT_LEASE_NAME, DEFAULT_NAMESPACE, EVENT_CONTROLLER } from './names.js';
import { NodeSchema } from './nodes.js';
import { PoolReconciler } from './reconciler.js';
import { NodePeerPublisher } from './peer-slices/node-peers.js';
import { PeerSlicePublisher } from './peer-slices/publisher.js';
import { ClaimView, DEFAULT_SERVICE_QUARANTINE_MS } from './service-claims.js';
import { BY_NAMESPACE } from './service-handlers.js';
import { NamespaceSchema } from './service-scope.js';
import { startServiceSession, type ServiceSession } from './service-session.js';
import { RelayScaler } from './peer-relay/scaler.js';
import type { Operator, OperatorOptions } from './operator-options.js';

export type { Operator, OperatorOptions } from './operator-options.js';
import { ClusterView } from './view.js';

interface Session {
  controller: Controller;
  claimGc: ClaimGc;
  relayScaler: RelayScaler | undefined;
  services: ServiceSession;
  off: () => void;
}

export async function startOperator(options: OperatorOptions): Promise<Operator> {
  const log = options.logger;
  const registry = options.registry ?? new Registry();
  const metricsOptions: MetricsOptions = { registry, prefix: METRICS_PREFIX };
  const metrics = new OperatorMetrics(registry, {
    processMetrics: options.processMetrics ?? true,
  });
  const { transport } = options;
  const cacheOptions = {
    logger: log,
    metrics: metricsOptions,
    ...(options.watchdogMs ? { watchdogMs: options.watchdogMs } : {}),
  };
  const view = new ClusterView(
    new Cache({ source: resourceListWatch(transport, POOLS), schema: Pool, ...cacheOptions }),
    new Cache({ source: resourceListWatch(transport, NODES), schema: NodeSchema, ...cacheOptions }),
    new Cache({
      source: resourceListWatch(transport, NODECONFIGS),
      schema: NodeConfig,
      ...cacheOptions,
    }),
  );
  // Every AddressClaim, unparsed: the claim GC writes a claim back whole (claim-gc.ts).
  const claims = new Cache<KubeObject>({
    source: resourceListWatch(transport, ADDRESSCLAIMS),
    name: 'addressclaims',
    ...cacheOptions,
  });
  const claimView = new ClaimView(claims);
  // What the Service address controller reads besides pools and claims.
  const services = new Cache<Service>({
    source: resourceListWatch(transport, SERVICES),
    schema: Service,
    indexers: { [BY_NAMESPACE]: (s) => [s.metadata.namespace] },
    ...cacheOptions,
  });
  const namespaces = new Cache({
    source: resourceListWatch(transport, NAMESPACES),
    schema: NamespaceSchema,
    ...cacheOptions,
  });
  const serviceQuarantineMs = options.serviceQuarantineMs ?? DEFAULT_SERVICE_QUARANTINE_MS;
  const loopMetrics = new LoopMetrics(metricsOptions);
  const events = new EventRecorder({
    transport,
    reportingController: EVENT_CONTROLLER,
    reportingInstance: options.identity.slice(0, 128),
    logger: log,
  });
  const eventWrites = new Limiter(4);
  let session: Session | undefined;
  const reconciler = new PoolReconciler({
    transport,
    view,
    writes: new Limiter(options.concurrency ?? 16),
    eventWrites,
    events,
    logger: log,
    metrics,
    quarantineMs: options.quarantineMs ?? DEFAULT_PREFIX_QUARANTINE_MS,
    serviceAddresses: {
      claims: () => claimView.all().map((r) => r.claim),
      waiting: (pool) => session?.services.waiting(pool) ?? [],
    },
  });

  // The Enforceable condition on ClusterNetworkPolicies (when their CRD is installed).
  const clusterPolicies = new ClusterPolicyStatus({
    transport,
    logger: log,
    fieldManager: OPERATOR_FIELD_MANAGER,
    metrics: metricsOptions,
    ...(options.watchdogMs ? { watchdogMs: options.watchdogMs } : {}),
  });

  // Every pod's policy peer record, published once for every agent (peer-slices/).
  const peerSlices =
    (options.peerSlices ?? true)
      ? new PeerSlicePublisher({
          transport,
          logger: log,
          metrics,
          metricsOptions,
          ...(options.watchdogMs ? { watchdogMs: options.watchdogMs } : {}),
          ...(options.peerSliceBatchMs !== undefined ? { batchMs: options.peerSliceBatchMs } : {}),
        })
      : undefined;
  // Every Node's labels and addresses, for ClusterNetworkPolicy `nodes` peers (the same switch:
  // agents that read PeerSlices read NodePeers).
  const nodePeers =
    (options.peerSlices ?? true)
      ? new NodePeerPublisher({
          transport,
          logger: log,
          nodes: view.nodes,
          metrics,
          metricsOptions,
          ...(options.watchdogMs ? { watchdogMs: options.watchdogMs } : {}),
        })
      : undefined;

  let stopping = false;
  const startSession = () => {
    const controller = new Controller({
      name: 'pools',
      workers: options.workers ?? 2,
      logger: log,
      metrics: metricsOptions,
      reconcile: (key, ctx) => reconciler.reconcile(key, ctx),
    });
    const off = wireHandlers(view, controller);
    controller.start();
    const claimGc = new ClaimGc({
      transport,
      claims,
      nodes: view.nodes,
      services,
      serviceQuarantineMs,
      limiter: new Limiter(options.concurrency ?? 16),
      logger: log,
      metrics,
      loopMetrics,
      ...(options.claimGcPeriodMs ? { periodMs: options.claimGcPeriodMs } : {}),
      ...(options.claimGraceMs !== undefined ? { graceMs: options.claimGraceMs } : {}),
    });
    claimGc.start();
    const relayScaler = options.peerRelayScale
      ? new RelayScaler({
          transport,
          nodes: view.nodes,
          namespace: options.namespace ?? DEFAULT_NAMESPACE,
          logger: log,
          loopMetrics,
          ...options.peerRelayScale,
        })
      : undefined;
    relayScaler?.start();
    const serviceSession = startServiceSession({
      transport,
      services,
      namespaces,
      poolCache: view.pools,
      pools: () => view.allPools(),
      claims,
      view: claimView,
      poolsController: controller,
      events,
      eventWrites,
      logger: log,
      metrics,
      metricsOptions,
      workers: options.workers ?? 2,
      serveUnsetClass: options.serveUnsetLbClass ?? true,
      quarantineMs: serviceQuarantineMs,
    });
    session = { controller, claimGc, relayScaler, services: serviceSession, off };
    void clusterPolicies.setLeading(true);
    peerSlices
      ?.setLeading(true)
      .catch((error: unknown) =>
        log.error('peer slices: cannot start publishing', { error: String(error) }),
      );
    nodePeers
      ?.setLeading(true)
      .catch((error: unknown) =>
        log.error('node peers: cannot start publishing', { error: String(error) }),
      );
  };
  const stopSession = async () => {
    const s = session;
    session = undefined;
    if (!s) return;
    s.off();
    await Promise.all([
      s.controller.stop(),
      s.claimGc.stop(),
      s.relayScaler?.stop(),
      s.services.stop(),
      clusterPolicies.setLeading(false),
      peerSlices?.setLeading(false),
      nodePeers?.setLeading(false),
    ]);
  };

  // On becoming leader: caches synced (a Service address controller reading an empty claim or
  // namespace cache would take addresses twice or release granted ones), then a fresh list
  // (the last leader's writes may not have reached our watches yet), then reconcile.
  const lead = async (signal: AbortSignal) => {
    // A cache stopped before it synced rejects: the operator is stopping, nothing to lead.
    const synced = Promise.all([view.synced, claims.synced, services.synced, namespaces.synced]);
    await Promise.race([
      synced.catch(() => undefined),
      new Promise((r) => signal.addEventListener('abort', r)),
    ]);
    for (let attempt = 0; !signal.aborted; attempt++) {
      try {
        await view.refresh(transport, log, signal);
        break;
      } catch {
        await sleep(Math.min(30_000, 500 * 2 ** attempt), undefined, signal);
      }
    }
    if (signal.aborted || stopping) return;
    startSession();
  };

  const elector =
    (options.leaderElect ?? true)
      ? new LeaderElector({
          store: kubeLeaseStore(
            transport,
            options.namespace ?? DEFAULT_NAMESPACE,
            options.leaseName ?? DEFAULT_LEASE_NAME,
          ),
          identity: options.identity,
          logger: log,
          metrics: metricsOptions,
          ...(options.leaseDurationMs ? { leaseDurationMs: options.leaseDurationMs } : {}),
          ...(options.renewDeadlineMs ? { renewDeadlineMs: options.renewDeadlineMs } : {}),
          ...(options.retryPeriodMs ? { retryPeriodMs: options.retryPeriodMs } : {}),
          onStartedLeading: lead,
          onStoppedLeading: stopSession,
        })
      : undefined;

  // Liveness: the event loop still turns (a blocked loop would also stall every watch).
  let lastTick = Date.now();
  const ticker = setInterval(() => (lastTick = Date.now()), 1_000);
  ticker.unref();

  let health: HealthServer | undefined;
  if (options.healthPort !== undefined) {
    health = await startHealthServer({
      port: options.healthPort,
      ...(options.healthHost ? { host: options.healthHost } : {}),
      registry,
      logger: log,
      livenessChecks: {
        'event-loop': () => Date.now() - lastTick < 15_000,
      },
      checks: {
        'pools-synced': () => view.pools.hasSynced,
        'nodes-synced': () => view.nodes.hasSynced,
        'nodeconfigs-synced': () => view.configs.hasSynced,
        'addressclaims-synced': () => claims.hasSynced,
        'services-synced': () => services.hasSynced,
        'namespaces-synced': () => namespaces.hasSynced,
        // Leading or standing by are both healthy; shutting down is not.
        'leader-election': () => !stopping,
      },
    });
  }

  view.pools.start();
  view.nodes.start();
  view.configs.start();
  claims.start();
  services.start();
  namespaces.start();
  clusterPolicies.start();
  peerSlices?.start();
  nodePeers?.start();
  if (elector) elector.start();
  else void lead(new AbortController().signal);
  log.info('operator started', {
    identity: options.identity,
    leaderElect: elector !== undefined,
    healthPort: health?.port,
  });

  return {
    registry,
    healthPort: health?.port,
    isLeader: () => session !== undefined,
    isReady: () =>
      view.hasSynced && claims.hasSynced && services.hasSynced && namespaces.hasSynced && !stopping,
    async stop() {
      if (stopping) return;
      stopping = true;
      log.info('operator stopping');
      if (elector) await elector.stop();
      else await stopSession();
      await Promise.all([
        view.pools.stop(),
        view.nodes.stop(),
        view.configs.stop(),
        claims.stop(),
        services.stop(),
        namespaces.stop(),
        clusterPolicies.stop(),
        peerSlices?.stop(),
        nodePeers?.stop(),
      ]);
      view.close();
      claimView.close();
      clearInterval(ticker);
      await health?.close();
      log.info('operator stopped');
    },
  };
}
