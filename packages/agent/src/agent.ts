// The node agent: start-up in the documented order, then serve the CNI socket. Every kernel
// and API edge is injected (Datapath, KubeTransport) so the sequence runs in unit tests on
// FakeDatapath and FakeApiServer, and for real in the kernel and cluster tiers.
import { type AddressAllocator } from '@flock/ipam';
import { entryKey, AllocationStore, type AllocationEntry } from './store/index.js';
import {
  CLUSTER_NETWORK_POLICIES,
  EventRecorder,
  Loop,
  apiVersionOf,
  startHealthServer,
  type KubeTransport,
} from '@flock/kube';
import type { FileSystem } from '@flock/exec';
import { API_VERSION, NODECONFIG_KIND, type Logger } from '@flock/api';
import { Registry } from 'prom-client';
import { CniHandlers, type FaultPoint } from './cni/handlers.js';
import { startCniServer, type CniServer } from './cni-server/index.js';
import type { AgentConfig } from './core/config.js';
import { AgentMetrics } from './core/metrics.js';
import { agentView } from './status/metrics-view.js';
import { NetworkConditionKeeper } from './node-status/node-condition.js';
import { NodeConfigTracker, nodeConfigEvents } from './node/node-config.js';
import { PodLookupWithFallback, clusterPodCache, nodePods } from './node/pods.js';
import {
  DropCounters,
  PolicyReconciler,
  policyCaches,
  type NftListTable,
  type PolicyApplier,
} from './policy/index.js';
import { hostVethName, type Datapath } from './datapath/index.js';
import type { BirdControl } from '@flock/bird';
import { Routing, bfdControl, birdControls, routingSettings } from './routing/index.js';
import { agentStatus } from './status/snapshot.js';
import { startStatusServer, statusSocketPath } from './status/server.js';
import { agentVersion } from './core/version.js';

/** How long start-up waits for the NetworkPolicy caches before serving the CNI socket anyway. */
const POLICY_SYNC_WAIT_MS = 30_000;

interface AgentDeps {
  config: AgentConfig;
  transport: KubeTransport;
  datapath: Datapath;
  logger: Logger;
  registry?: Registry;
  /** Process metrics (CPU, memory, event loop) in the registry (default true). */
  processMetrics?: boolean;
  /** Test-only: called at ADD/DEL fault points. */
  fault?: (point: FaultPoint) => void | Promise<void>;
  /** Test-only: the allocation store's file operations (fault points inside a store write). */
  storeFileSystem?: FileSystem;
  /**
   * NetworkPolicy's kernel edge (main.ts: nftables in the node's namespace). Without it the
   * agent enforces no NetworkPolicy — only for unit tests of other parts of the agent.
   */
  policyApplier?: PolicyApplier;
  /** `nft -j list table inet flock`, for the per-pod drop counters (absent: none exported). */
  policyListing?: NftListTable;
  /** BIRD's control socket (default: BirdClients on --bird-socket); unit tests pass a fake. */
  bird?: { reload: BirdControl; status: BirdControl };
  /** The BFD speaker's control socket (default: a BirdClient on --bfd-socket, when set). */
  bfd?: BirdControl;
}

export interface RunningAgent {
  handlers: CniHandlers;
  store: AllocationStore;
  nodeConfig: NodeConfigTracker;
  /** NetworkPolicy enforcement (onResult feeds the PolicyApplied condition); absent without an applier. */
  policy?: PolicyReconciler;
  /** Announcements, anycast routes, orphan sweep, NodeConfig status (status.setPolicy). */
  routing: Routing;
  /** Port of the health server (when enabled). */
  healthPort?: number;
  stop(): Promise<void>;
}

export async function startAgent(deps: AgentDeps): Promise<RunningAgent> {
  const { config, transport, datapath, logger } = deps;
  const registry = deps.registry ?? new Registry();
  const metrics = new AgentMetrics(
    registry,
    deps.processMetrics === undefined ? {} : { processMetrics: deps.processMetrics },
  );
  const step = (name: string, meta: Record<string, unknown> = {}) =>
    logger.info(`start-up: ${name}`, { node: config.nodeName, ...meta });
  let ready = false;
  const stoppers: (() => Promise<void> | void)[] = [];
  const stop = async () => {
    for (const s of stoppers.reverse()) await s();
  };

  try {
    step('host sysctls');
    for (const r of await datapath.applyHostSysctls()) {
      if (!r.ok)
        logger.warn('could not set a host sysctl; continuing', {
          key: r.key,
          value: r.value,
          error: r.error,
        });
    }

    const events = new EventRecorder({
      transport,
      reportingController: 'flock.fritzlab.net/agent',
      reportingInstance: config.nodeName,
      logger,
    });
    const nodeConfig = new NodeConfigTracker({
      onChange: nodeConfigEvents(events, config.nodeName),
      transport,
      nodeName: config.nodeName,
      logger,
      addressQuarantineMs: config.addressQuarantineMs,
      watchdogMs: config.watchdogMs,
      metrics: metrics.options,
      // A NodeConfig that comes back: only addresses the store still holds stay allocated
      // (asked before the store below is loaded, this throws and everything stays allocated).
      held: (owner) => store.entries().some((e) => entryKey(e.containerID, e.ifname) === owner),
    });
    // Health first, so a node stuck waiting for its NodeConfig is visible (not ready).
    const health = config.healthPort
      ? await startHealthServer({
          port: config.healthPort,
          ...(config.healthHost === undefined ? {} : { host: config.healthHost }),
          registry,
          logger,
          checks: { started: () => ready, nodeconfig: () => nodeConfig.current() !== undefined },
        })
      : undefined;
    if (health) stoppers.push(() => health.close());

    step('wait for NodeConfig');
    nodeConfig.start();
    stoppers.push(() => nodeConfig.stop());
    const node = await nodeConfig.waitForNodeConfig(config.nodeConfigTimeoutMs);

    step('load allocation store', { path: config.storePath });
    const store = new AllocationStore(
      config.storePath,
      deps.storeFileSystem ? { fileSystem: deps.storeFileSystem } : {},
    );
    await store.load();
    for (const e of store.entries().filter((x) => x.state === 'committed'))
      remark(node.allocator, e, logger);
    // Released before the restart: still quarantined for the rest of their time.
    let restored = 0;
    for (const r of store.released()) if (node.allocator.restoreReleased(r)) restored++;
    if (restored) logger.info('released addresses still quarantined', { count: restored });

    // One pod cache for the whole agent: NetworkPolicy peers are every pod of the cluster, and
    // this node's pods are its by-node view.
    const allPods = clusterPodCache(transport, logger, config.watchdogMs, metrics.options);
    const pods = nodePods(allPods, config.nodeName);
    const routing = new Routing({
      nodeName: config.nodeName,
      transport,
      logger,
      store,
      pods,
      nodeConfig,
      datapath,
      undo: async (e) => void (await handlers.undoIfUnchanged(e)),
      bird: deps.bird ?? birdControls(config.birdSocketPath),
      ...(config.bfdSocketPath ? { bfd: deps.bfd ?? bfdControl(config.bfdSocketPath) } : {}),
      settings: routingSettings(config),
      metrics,
      warn: (reason, note) =>
        void events.event(
          { apiVersion: API_VERSION, kind: NODECONFIG_KIND, metadata: { name: config.nodeName } },
          { type: 'Warning', reason, action: 'ConfigureBGP', note },
        ),
    });
    const podLookup = new PodLookupWithFallback(pods, transport);
    const policy = deps.policyApplier
      ? new PolicyReconciler({
          caches: policyCaches(transport, allPods, logger, metrics.options, config.watchdogMs),
          metrics,
          store,
          pods: podLookup,
          applier: deps.policyApplier,
          logger,
          resyncMs: config.resyncMs,
          logDroppedPerSecond: config.logDeniedPerSecond,
          warn: (p) =>
            void events.event(
              p.kind === 'ClusterNetworkPolicy'
                ? {
                    apiVersion: apiVersionOf(CLUSTER_NETWORK_POLICIES),
                    kind: CLUSTER_NETWORK_POLICIES.kind,
                    metadata: { name: p.name, ...(p.uid ? { uid: p.uid } : {}) },
                  }
                : {
                    apiVersion: 'networking.k8s.io/v1',
                    kind: 'NetworkPolicy',
                    metadata: {
                      name: p.name,
                      namespace: p.namespace,
                      ...(p.uid ? { uid: p.uid } : {}),
                    },
                  },
              {
                type: 'Warning',
                reason: 'PolicyNotEnforceable',
                action: 'Enforce',
                note: p.message,
              },
            ),
        })
      : undefined;
    if (!policy) logger.warn('no NetworkPolicy applier: NetworkPolicy is not enforced');
    const handlers = new CniHandlers({
      store,
      datapath,
      node: () => nodeConfig.current(),
      pods: podLookup,
      hooks: {
        ...(policy ? { beforeCommit: (e) => policy.beforeCommit(e) } : {}),
        changed: () => {
          policy?.trigger();
          routing.changed();
        },
      },
      logger,
      ready: () => ready,
      warn: (pod, reason, note) =>
        void events.event(pod, { type: 'Warning', reason, action: 'AddPod', note }),
      ...(deps.fault ? { fault: deps.fault } : {}),
    });

    const pending = store.entries().filter((x) => x.state === 'pending');
    step('drop pending leftovers of a previous run', { count: pending.length });
    for (const e of pending) await handlers.undo(e);

    step('start pod cache');
    allPods.start();
    stoppers.push(() => allPods.stop());

    step('keep NetworkUnavailable=False');
    const condition = new NetworkConditionKeeper(
      transport,
      config.nodeName,
      logger,
      config.resyncMs,
      config.watchdogMs,
      metrics,
    );
    condition.start();
    stoppers.push(() => condition.stop());

    step('blackhole summary routes');
    const blackholes = new Loop({
      name: 'blackholes',
      metrics: metrics.loops,
      periodMs: config.resyncMs,
      backoff: { baseMs: 1000, maxMs: config.resyncMs, jitter: 0.2 },
      sync: async () => {
        const nc = nodeConfig.current()?.nodeConfig;
        if (nc)
          await datapath.ensureBlackholes([
            nc.spec.cidr6,
            ...(nc.spec.cidr4 ? [nc.spec.cidr4] : []),
          ]);
      },
      onError: (error) =>
        logger.error('could not install blackhole routes', { error: String(error) }),
    });
    await blackholes.run().catch(() => undefined); // logged by onError
    blackholes.start();
    stoppers.push(() => blackholes.stop());

    step('announcements, anycast routes, orphan sweep', { birdConfig: config.birdConfigPath });
    policy?.onResult((r) => routing.status.setPolicy(r));
    await routing.start();
    stoppers.push(() => routing.stop());

    if (policy) {
      step('start the NetworkPolicy reconciler');
      policy.start();
      stoppers.push(() => policy.stop());
      // Until the caches have synced the previous table stays in force and ADDs are retried.
      if (!(await policy.waitForSync(POLICY_SYNC_WAIT_MS)))
        logger.warn('NetworkPolicy caches have not synced yet; ADDs wait for them', {
          waitedMs: POLICY_SYNC_WAIT_MS,
        });
    }

    step('serve the CNI socket', { socket: config.socketPath });
    const server: CniServer = await startCniServer({
      socketPath: config.socketPath,
      logger,
      handle: async (request) => {
        const started = process.hrtime.bigint();
        const response = await handlers.handle(request);
        const seconds = Number(process.hrtime.bigint() - started) / 1e9;
        const result = response.ok ? 'ok' : 'error';
        metrics.cniRequests.inc({ command: request.command, result });
        metrics.cniDuration.observe({ command: request.command, result }, seconds);
        if (!response.ok)
          metrics.cniErrors.inc({ command: request.command, code: String(response.error.code) });
        return response;
      },
    });
    stoppers.push(() => server.close());
    const drops =
      policy && deps.policyListing
        ? new DropCounters(
            deps.policyListing,
            () =>
              new Map(
                store
                  .entries()
                  .map((e) => [
                    hostVethName(e.containerID, e.ifname),
                    { namespace: e.namespace, pod: e.pod },
                  ]),
              ),
          )
        : undefined;
    metrics.observe(
      agentView({
        routing,
        nodeConfig,
        ...(policy ? { policy } : {}),
        ...(drops ? { drops } : {}),
      }),
    );
    const version = (() => {
      try {
        return agentVersion();
      } catch {
        return undefined;
      }
    })();
    const statusServer = await startStatusServer({
      socketPath: statusSocketPath(config),
      logger,
      status: () =>
        agentStatus({
          node: config.nodeName,
          ...(version ? { version } : {}),
          ready: () => ready,
          routing,
          nodeConfig,
          store,
          ...(policy ? { policy } : {}),
        }),
    });
    stoppers.push(() => statusServer.close());
    ready = true;
    step('ready');
    return {
      handlers,
      store,
      nodeConfig,
      routing,
      ...(policy ? { policy } : {}),
      ...(health ? { healthPort: health.port } : {}),
      stop,
    };
  } catch (error) {
    await stop();
    throw error;
  }
}

/** Re-mark a committed allocation in IPAM after a restart; a conflict is logged, not fatal. */
function remark(allocator: AddressAllocator, e: AllocationEntry, logger: Logger): void {
  const r = allocator.markAllocated({
    owner: entryKey(e.containerID, e.ifname),
    namespace: e.namespace,
    name: e.pod,
    ip6: e.ip6,
    ...(e.ip4 ? { ip4: e.ip4 } : {}),
    pinned: e.pinned,
  });
  if (!r.ok)
    logger.error('committed allocation does not fit this node any more', {
      containerID: e.containerID,
      error: r.error.message,
    });
}
