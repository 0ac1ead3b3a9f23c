// The node agent: every part constructed first, then started in the documented order, stopped
// in reverse (core/lifecycle.ts). Every kernel and API edge is injected (Datapath,
// KubeTransport) so the sequence runs in unit tests on FakeDatapath and FakeApiServer, and for
// real in the kernel and cluster tiers.
import { API_VERSION, NODECONFIG_KIND } from '@flock/api';
import { EventRecorder, startHealthServer } from '@flock/kube';
import { Registry } from 'prom-client';
import { fetchNamespace, fetchNodeReady } from './claims/api-reads.js';
import { ClaimBook } from './claims/book.js';
import { claimCache, claimLookup } from './claims/cache.js';
import { ClaimKeeper } from './claims/keeper.js';
import { CniHandlers } from './cni/handlers.js';
import { metered } from './cni/metered.js';
import { OrphanSweep } from './cni/orphan-sweep.js';
import { AttachmentRecovery } from './cni/recovery.js';
import { startCniServer } from './cni-server/index.js';
import { reservedHostPorts } from './core/config.js';
import { caches, serving, startInOrder, step, type Component } from './core/lifecycle.js';
import { AgentMetrics } from './core/metrics.js';
import { statusVersion } from './core/version.js';
import { NetworkConditionKeeper } from './node-status/node-condition.js';
import { statusInputs } from './node-status/status-inputs.js';
import { NodeStatusReporter } from './node-status/status-reporter.js';
import { NodeConfigTracker, nodeConfigEvents } from './node/node-config.js';
import { PodLookupWithFallback, fetchPod, nodePods } from './node/pods.js';
import { onSnatChange, podSources, storeDropCounters } from './policy/index.js';
import { agentPolicy } from './policy/wiring.js';
import { Blackholes } from './routing/blackholes.js';
import { translatorParts } from './nat64/index.js';
import { Routing, bfdControl, birdControls, routingSettings } from './routing/index.js';
import { endpointSliceCache, serviceCache } from './routing/service-addresses.js';
import { agentView } from './status/metrics-view.js';
import { agentStatus } from './status/snapshot.js';
import { startStatusServer, statusSocketPath } from './status/server.js';
import { AllocationStore, entryKey } from './store/index.js';
import type { AgentDeps, RunningAgent } from './agent-deps.js';

export type { AgentDeps, RunningAgent } from './agent-deps.js';
import { storeLockComponent } from './store/store-lock.js';

/** How long start-up waits for the NetworkPolicy caches before serving the CNI socket anyway. */
const POLICY_SYNC_WAIT_MS = 30_000;
/** How long start-up waits for each cache; what reads one begins when it syncs. */
const CACHE_SYNC_WAIT_MS = 60_000;

export async function startAgent(deps: AgentDeps): Promise<RunningAgent> {
  const parts = buildAgent(deps);
  const { logger, config } = deps;
  const stop = await startInOrder(parts.components, (name) =>
    logger.info(`start-up: ${name}`, { node: config.nodeName }),
  );
  parts.setReady();
  logger.info('start-up: ready', { node: config.nodeName });
  const healthPort = parts.healthPort();
  return { ...parts.running, ...(healthPort === undefined ? {} : { healthPort }), stop };
}

/** Every part of the agent, constructed (no I/O yet), and the order they start in. */
function buildAgent(deps: AgentDeps) {
  const { config, transport, datapath, logger } = deps;
  const nodeName = config.nodeName;
  const registry = deps.registry ?? new Registry();
  const metrics = new AgentMetrics(
    registry,
    deps.processMetrics === undefined ? {} : { processMetrics: deps.processMetrics },
  );
  let ready = false;
  const version = statusVersion();
  const events = new EventRecorder({
    transport,
    reportingController: 'flock.fritzlab.net/agent',
    reportingInstance: nodeName,
    logger,
  });
  const onNodeConfig = {
    apiVersion: API_VERSION,
    kind: NODECONFIG_KIND,
    metadata: { name: nodeName },
  };

  const store = new AllocationStore(config.storePath, {
    maxQuarantineMs: config.addressQuarantineMs,
    ...(deps.storeFileSystem ? { fileSystem: deps.storeFileSystem } : {}),
  });
  // The policy table's SNAT and the blackhole of a Private pool's range follow the NodeConfig's
  // IPv4 mode at once (the cache calls this only once started, after both below exist).
  const translators = translatorParts(deps, {
    current: () => nodeConfig.current()?.nodeConfig.spec,
    logger,
    periodMs: config.resyncMs,
  });
  const nodeConfigChanged = [
    nodeConfigEvents(events, nodeName),
    onSnatChange(() => {
      policy?.trigger();
      blackholes.trigger();
    }),
    ...translators.listeners,
  ];
  const nodeConfig = new NodeConfigTracker({
    onChange: (nc) => nodeConfigChanged.forEach((listener) => listener(nc)),
    transport,
    nodeName,
    logger,
    addressQuarantineMs: config.addressQuarantineMs,
    addressQuarantineShare: config.addressQuarantineShare,
    watchdogMs: config.watchdogMs,
    metrics: metrics.options,
    // A NodeConfig that comes back: only addresses the store still holds stay allocated (before
    // the store is loaded every address stays allocated).
    held: (owner) =>
      !store.isLoaded || store.entries().some((e) => entryKey(e.containerID, e.ifname) === owner),
  });
  const blackholes = new Blackholes({
    datapath,
    nodeConfig,
    periodMs: config.resyncMs,
    logger,
    loops: metrics.loops,
  });
  // This node's pods, and NetworkPolicy's peers on every node (--policy-peers).
  const podSource = podSources({
    policyPeers: config.policyPeers,
    ...(config.peerRelay
      ? {
          relay: {
            ...config.peerRelay,
            caFile: config.peerRelayCaFile,
            tokenFile: config.peerRelayTokenFile,
          },
        }
      : {}),
    transport,
    logger,
    nodeName,
    watchdogMs: config.watchdogMs,
    metrics: metrics.options,
  });
  const podCache = podSource.pods;
  const pods = nodePods(podCache, nodeName);
  const podLookup = new PodLookupWithFallback(pods, transport);
  // Who owns each floating address: one cache of every claim, read by the plan and the policy;
  // written only through the book.
  const claims = claimCache(transport, logger, config.watchdogMs, metrics.options);
  const claimOf = claimLookup(claims);
  const book = new ClaimBook({
    transport,
    nodeName,
    logger,
    fetchPod: (namespace, name) => fetchPod(transport, namespace, name),
    nodeReady: (name) => fetchNodeReady(transport, name),
  });
  const keeper = new ClaimKeeper({
    nodeName,
    store,
    pods,
    claims,
    book,
    nodeConfig,
    periodMs: config.sweepPeriodMs,
    logger,
    warn: (pod, reason, note) =>
      void events.event(pod, { type: 'Warning', reason, action: 'ClaimAddress', note }),
    loops: metrics.loops,
  });
  const policy = deps.policyApplier
    ? agentPolicy({
        config,
        transport,
        applier: deps.policyApplier,
        peers: podSource.peers,
        store,
        pods: podLookup,
        nodeConfig,
        claims,
        claimOf,
        events,
        metrics,
        logger,
      })
    : undefined;
  if (!policy) logger.warn('no NetworkPolicy applier: NetworkPolicy is not enforced');
  // Service addresses: every Service, and how many ready endpoints each has on this node.
  const serviceCaches = {
    services: serviceCache(transport, logger, config.watchdogMs, metrics.options),
    slices: endpointSliceCache(transport, nodeName, logger, config.watchdogMs, metrics.options),
  };
  // Its watch of this one Node also gives routing the Node's addresses (router ID, BFD sources).
  const nodeCondition = new NetworkConditionKeeper(
    transport,
    nodeName,
    logger,
    config.resyncMs,
    config.watchdogMs,
    metrics,
  );
  const routing = new Routing({
    nodeName,
    transport,
    node: nodeCondition.node,
    logger,
    store,
    pods,
    claimOf,
    claimsReady: () => keeper.firstPass(),
    services: serviceCaches,
    ...(deps.kubeProxyHealth ? { kubeProxyHealth: deps.kubeProxyHealth } : {}),
    ...(deps.readKubeProxy ? { readKubeProxy: deps.readKubeProxy } : {}),
    nodeConfig,
    datapath,
    bird: deps.bird ?? birdControls(config.birdSocketPath),
    ...(config.bfdSocketPath ? { bfd: deps.bfd ?? bfdControl(config.bfdSocketPath) } : {}),
    settings: routingSettings(config),
    metrics,
    warn: (reason, note) =>
      void events.event(onNodeConfig, { type: 'Warning', reason, action: 'ConfigureBGP', note }),
  });
  const handlers = new CniHandlers({
    store,
    datapath,
    node: () => nodeConfig.current(),
    pods: podLookup,
    claims: { book, keeper, namespace: (name) => fetchNamespace(transport, name) },
    hooks: {
      ...(policy ? { beforeCommit: (e) => policy.beforeCommit(e) } : {}),
      changed: () => {
        policy?.trigger();
        routing.changed();
        keeper.trigger();
      },
    },
    logger,
    ready: () => ready,
    reservedHostPorts: reservedHostPorts(config),
    warn: (pod, reason, note) =>
      void events.event(pod, { type: 'Warning', reason, action: 'AddPod', note }),
    ...(deps.fault ? { fault: deps.fault } : {}),
  });
  const sweep = new OrphanSweep({
    store,
    pods,
    transport,
    undo: (e) => handlers.undoIfUnchanged(e),
    hostVeths: async () => new Set((await datapath.listPodVeths()).map((v) => v.name)),
    graceMs: config.orphanGraceMs,
    periodMs: config.sweepPeriodMs,
    logger,
    metrics,
  });
  const nodeStatus = new NodeStatusReporter({
    transport,
    nodeName,
    logger,
    nodeConfig: () => nodeConfig.cache.getObject(nodeName),
    inputs: () =>
      statusInputs({
        nodeName,
        nodeConfig,
        routing,
        store,
        ...(version ? { agentVersion: version } : {}),
      }),
    loops: metrics.loops,
  });
  routing.onChange(() => nodeStatus.refresh());
  routing.onApplied((hostRoutes) => keeper.setAnnounced(hostRoutes));
  policy?.onResult((r) => nodeStatus.setPolicy(r));
  metrics.observe(
    agentView({
      routing,
      nodeStatus,
      nodeConfig,
      ...(policy ? { policy } : {}),
      ...(policy && deps.policyListing
        ? { drops: storeDropCounters(deps.policyListing, store) }
        : {}),
    }),
  );
  let healthPort: number | undefined;

  const components: Component[] = [
    // Before anything reads the store or binds a node port: another agent may still run here.
    storeLockComponent(config.storePath, config.storeLockWaitMs, logger),
    // Health next, so a node stuck waiting for its NodeConfig is visible (not ready).
    ...(config.healthPort
      ? [
          serving('health server', async () => {
            const server = await startHealthServer({
              port: config.healthPort,
              ...(config.healthHost === undefined ? {} : { host: config.healthHost }),
              registry,
              logger,
              checks: {
                started: () => ready,
                nodeconfig: () => nodeConfig.current() !== undefined,
              },
            });
            healthPort = server.port;
            return server;
          }),
        ]
      : []),
    step('host sysctls', async () => {
      for (const r of await datapath.applyHostSysctls())
        if (!r.ok)
          logger.warn('could not set a host sysctl; continuing', {
            key: r.key,
            value: r.value,
            error: r.error,
          });
    }),
    {
      name: 'wait for NodeConfig',
      start: async () => {
        nodeConfig.start();
        await nodeConfig.waitForNodeConfig(config.nodeConfigTimeoutMs);
      },
      stop: () => nodeConfig.stop(),
    },
    new AttachmentRecovery({ store, nodeConfig, handlers, logger }),
    ...podSource.components,
    // Bounded waits: the sweep and the announcements begin whenever the pod cache syncs;
    // Service addresses are announced once both Service caches have, never before.
    caches('pod cache', [podCache], CACHE_SYNC_WAIT_MS),
    caches('address claims cache', [claims], CACHE_SYNC_WAIT_MS),
    keeper,
    caches('Service caches', [serviceCaches.services, serviceCaches.slices], CACHE_SYNC_WAIT_MS),
    nodeCondition,
    blackholes,
    ...translators.components,
    sweep,
    routing,
    nodeStatus,
    ...(policy
      ? [
          {
            name: 'NetworkPolicy reconciler',
            start: async () => {
              policy.start();
              // Until the caches have synced the previous table stays in force and ADDs wait.
              if (!(await policy.waitForSync(POLICY_SYNC_WAIT_MS)))
                logger.warn('NetworkPolicy caches have not synced yet; ADDs wait for them', {
                  waitedMs: POLICY_SYNC_WAIT_MS,
                });
            },
            stop: () => policy.stop(),
          },
        ]
      : []),
    serving('CNI socket', () =>
      startCniServer({
        socketPath: config.socketPath,
        logger,
        handle: metered((request) => handlers.handle(request), metrics),
      }),
    ),
    serving('status socket', () =>
      startStatusServer({
        socketPath: statusSocketPath(config),
        logger,
        status: () =>
          agentStatus({
            node: nodeName,
            ...(version ? { version } : {}),
            ready: () => ready,
            routing,
            nodeStatus,
            nodeConfig,
            store,
            claims: keeper,
            ...(policy ? { policy } : {}),
            ...(deps.nat64 ? { nat64: deps.nat64 } : {}),
            ...(deps.interNode ? { interNode: deps.interNode } : {}),
          }),
      }),
    ),
  ];
  return {
    components,
    setReady: () => {
      ready = true;
    },
    healthPort: () => healthPort,
    running: {
      handlers,
      store,
      nodeConfig,
      routing,
      sweep,
      nodeStatus,
      ...(policy ? { policy } : {}),
    },
  };
}
