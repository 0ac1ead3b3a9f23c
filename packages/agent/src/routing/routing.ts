// The node's routing side, wired together: BIRD announcements, anycast routes, the orphan
// sweep and NodeConfig status. Nothing is announced, routed or swept before this node's pod
// cache has synced: an empty cache would look like "every pod is gone" and withdraw the node's
// pinned and anycast addresses at each agent restart.
//
// Triggers: changed() (every ADD/DEL through CniHooks.changed, every sweep), pod cache events
// that change a pod's UID, phase or readiness, NodeConfig events (also re-read the peers'
// Secrets and the router ID), a short tick (anycast period, default 2 s) and the sweep period
// (default 30 s: sweep, Secrets, router ID). Pod deletions sweep at once.
import type { Logger, Pod } from '@flock/api';
import { renderBfdSpeakerConfig, withoutBfd, type BirdControl } from '@flock/bird';
import type { AllocationEntry, AllocationStore } from '@flock/ipam';
import type { CacheView, KubeTransport } from '@flock/kube';
import type { Datapath } from '../datapath/index.js';
import type { NodeConfigTracker } from '../node-config.js';
import type { AgentMetrics } from '../metrics.js';
import { fetchPod } from '../pods.js';
import { agentVersion } from '../version.js';
import {
  advertisedCount,
  planAnnouncements,
  toBirdModel,
  type AnnouncementPlan,
} from './announcements.js';
import { AnycastReconciler } from './anycast-reconciler.js';
import { BirdAnnouncer } from './announcer.js';
import { needsBfdSource, withBfdSources } from './bfd-sources.js';
import { ExportLatency } from './export-latency.js';
import { entryLiveness, livenessSignature } from './liveness.js';
import { OrphanSweeper } from './orphan-sweep.js';
import { passwordFile } from './password-file.js';
import {
  PeerPasswords,
  apiSecretReader,
  noPeers,
  peerWarnings,
  type ResolvedPeers,
  type SecretReader,
} from './peer-secrets.js';
import {
  chooseRouterId,
  logRouterId,
  readNodeAddresses,
  type NodeAddress,
  type RouterIdChoice,
} from './router-id.js';
import { SerialTask } from './serial-task.js';
import { bgpPeerStatuses, type PeerStatus } from './status-compute.js';
import { NodeStatusReporter } from './status-reporter.js';
import { timedReloads } from './timed-reloads.js';

/** Routes in the model BIRD last accepted, by class. */
export interface ExportedRoutes {
  aggregate: number;
  pinned: number;
  anycast: number;
}

export interface RoutingSettings {
  /** bird.conf, shared with the BIRD container. */
  birdConfigPath: string;
  /** The BFD speaker's config (with deps.bfd): BFD runs there, not in the BGP BIRD. */
  bfdConfigPath?: string;
  /** --router-id: wins over everything else. */
  routerIdOverride?: string;
  orphanGraceMs: number;
  sweepPeriodMs: number;
  anycastPeriodMs: number;
  bgpStatusPeriodMs: number;
  /** Namespace of a passwordSecretRef without one (the agent's own). */
  secretNamespace: string;
  /** Where the last BGP passwords read are kept across restarts (none: memory only). */
  passwordFile?: string;
  /** How long start() waits for the pod cache before going on without it (default 60 s). */
  podCacheSyncTimeoutMs?: number;
}

interface RoutingDeps {
  nodeName: string;
  transport: KubeTransport;
  logger: Logger;
  store: Pick<AllocationStore, 'entries' | 'get'>;
  /** This node's pods (the pod cache's by-node view). */
  pods: CacheView<Pod>;
  nodeConfig: NodeConfigTracker;
  datapath: Pick<Datapath, 'listAnycastRoutes' | 'ensureAnycastRoute'>;
  /** Tear down an allocation (CniHandlers.undo). */
  undo: (entry: AllocationEntry) => Promise<void>;
  /** reload: configure (a few quick attempts; the announcer retries). status: show protocols. */
  bird: { reload: BirdControl; status: BirdControl };
  /** The BFD speaker's control socket (with settings.bfdConfigPath). */
  bfd?: BirdControl;
  settings: RoutingSettings;
  /** Default: GET from the API server. */
  readSecret?: SecretReader;
  /** A Warning Event about this node's BGP peers (on its NodeConfig). */
  warn?: (reason: string, note: string) => void;
  now?: () => number;
  /** The agent's metrics: BIRD reloads, ADD → exported, orphan removals, loop runs. */
  metrics?: AgentMetrics;
}

export class Routing {
  readonly status: NodeStatusReporter;
  private readonly announcer: BirdAnnouncer;
  private readonly bfdAnnouncer: BirdAnnouncer | undefined;
  private bfdWarnings = '';
  private readonly anycast: AnycastReconciler;
  private readonly sweeper: OrphanSweeper;
  private readonly passwords: PeerPasswords;
  private readonly passTask: SerialTask;
  private readonly sweepTask: SerialTask;
  private readonly refreshTask: SerialTask;
  private peers: ResolvedPeers = noPeers();
  private routerId: RouterIdChoice | undefined;
  private nodeAddresses: NodeAddress[] = [];
  private plan: AnnouncementPlan | undefined;
  /** The plan of the last model handed to BIRD, and the routes of the last one BIRD ran. */
  private announcedPlan: AnnouncementPlan | undefined;
  private exported: ExportedRoutes | undefined;
  private readonly exportLatency: ExportLatency;
  private sweepTrigger = 'start-up';
  private warnings = '';
  private live = false;
  private stopped = false;
  private readonly cleanups: (() => void)[] = [];
  private readonly version = statusVersion();

  constructor(private readonly deps: RoutingDeps) {
    const { logger, settings } = deps;
    const fail = (what: string) => (error: unknown) =>
      logger.error(`${what} failed`, { error: String(error) });
    const { metrics } = deps;
    const loop = (name: string) => (metrics ? { metrics: metrics.loops, name } : undefined);
    this.exportLatency = new ExportLatency((cls, s) =>
      metrics?.addToExport.observe({ class: cls }, s),
    );
    this.announcer = new BirdAnnouncer({
      configPath: settings.birdConfigPath,
      control: metrics ? timedReloads(deps.bird.reload, metrics) : deps.bird.reload,
      onApplied: () => this.applied(),
      logger,
      onState: (state) => {
        logger.info('BIRD announcement state changed', {
          state: state.status,
          ...('message' in state ? { error: state.message } : {}),
        });
        this.status.refresh();
      },
    });
    if (settings.bfdConfigPath && deps.bfd) {
      this.bfdAnnouncer = new BirdAnnouncer({
        configPath: settings.bfdConfigPath,
        control: deps.bfd,
        logger,
        render: renderBfdSpeakerConfig,
        onState: (state) =>
          logger.info('BFD speaker state changed', {
            state: state.status,
            ...('message' in state ? { error: state.message } : {}),
          }),
      });
    }
    this.anycast = new AnycastReconciler({
      datapath: deps.datapath,
      desired: () => this.plan?.anycast,
      logger,
    });
    this.sweeper = new OrphanSweeper({
      entries: () => deps.store.entries(),
      current: (e) => deps.store.get(e.containerID, e.ifname),
      podOf: (namespace, name) => deps.pods.getObject(name, namespace),
      fetchPod: (namespace, name) => fetchPod(this.deps.transport, namespace, name),
      undo: deps.undo,
      graceMs: settings.orphanGraceMs,
      ...(deps.now ? { now: deps.now } : {}),
      logger,
    });
    this.passwords = new PeerPasswords(
      deps.readSecret ?? apiSecretReader(deps.transport),
      settings.secretNamespace,
      logger,
      settings.passwordFile ? passwordFile(settings.passwordFile, logger) : undefined,
    );
    this.passTask = new SerialTask(
      () => this.pass(),
      fail('announcement pass'),
      loop('announcements'),
    );
    this.sweepTask = new SerialTask(() => this.sweep(), fail('orphan sweep'), loop('orphan-sweep'));
    this.refreshTask = new SerialTask(
      () => this.refresh(),
      fail('BGP peer refresh'),
      loop('bgp-peers'),
    );
    this.status = new NodeStatusReporter({
      transport: deps.transport,
      nodeName: deps.nodeName,
      logger,
      bird: deps.bird.status,
      nodeConfig: () => deps.nodeConfig.cache.getObject(deps.nodeName),
      inputs: () => this.statusInputs(),
      pollMs: settings.bgpStatusPeriodMs,
      ...(metrics ? { loops: metrics.loops } : {}),
    });
  }

  /** An allocation was committed or removed: re-plan soon (coalesced). */
  changed(): void {
    if (this.live) this.passTask.schedule(20);
  }

  /** Start everything; waits (bounded) for the pod cache, then sweeps and announces once. */
  async start(): Promise<void> {
    const { pods, nodeConfig, settings, logger } = this.deps;
    this.cleanups.push(
      pods.addHandler(
        {
          onAdd: () => this.changed(),
          onUpdate: (old, pod) => {
            if (livenessSignature(old) === livenessSignature(pod)) return;
            this.changed();
            if (old.metadata.uid !== pod.metadata.uid) this.sweepSoon('pod replaced');
            else if (!entryLiveness({ podUID: pod.metadata.uid ?? '' }, pod).live)
              this.sweepSoon('pod terminated');
          },
          onDelete: () => {
            this.changed();
            this.sweepSoon('pod deleted');
          },
        },
        { replay: false },
      ),
      nodeConfig.cache.addHandler(
        {
          onAdd: () => void this.refreshTask.trigger(),
          // Only a new spec (generation) or a re-created object: not our own status writes.
          onUpdate: (old, nc) => {
            if (
              old.metadata.generation !== nc.metadata.generation ||
              old.metadata.uid !== nc.metadata.uid
            )
              void this.refreshTask.trigger();
          },
          onDelete: () => this.status.refresh(),
        },
        { replay: false },
      ),
    );
    this.status.start();
    const timeout = settings.podCacheSyncTimeoutMs ?? 60_000;
    const synced = await Promise.race([
      pods.synced.then(() => true),
      new Promise<false>((r) => {
        const t = setTimeout(() => r(false), timeout);
        this.cleanups.push(() => clearTimeout(t));
      }),
    ]).catch(() => false);
    if (synced) return this.begin();
    logger.warn(
      'the pod cache has not synced: announcements, anycast routes and the orphan sweep wait for it',
      { waitedMs: timeout },
    );
    pods.synced.then(
      () => void this.begin(),
      () => undefined,
    );
  }

  async stop(): Promise<void> {
    this.stopped = true;
    this.live = false;
    for (const c of this.cleanups.splice(0)) c();
    await Promise.all([this.passTask.stop(), this.sweepTask.stop(), this.refreshTask.stop()]);
    await this.announcer.close();
    await this.bfdAnnouncer?.close();
    await this.status.stop();
  }

  /** Run one announcement + anycast pass now (tests, and the tick). */
  reconcileNow(): Promise<void> {
    return this.passTask.trigger();
  }

  /** Run one orphan sweep now. */
  sweepNow(trigger = 'requested'): Promise<void> {
    this.sweepTrigger = trigger;
    return this.sweepTask.trigger();
  }

  /** The current plan (undefined before the pod cache synced). */
  get announcements(): AnnouncementPlan | undefined {
    return this.plan;
  }

  get birdState() {
    return this.announcer.state;
  }

  /** Each configured peer as BIRD last reported it (empty before the NodeConfig is known). */
  peerStatuses(): PeerStatus[] {
    const inputs = this.statusInputs();
    return inputs ? bgpPeerStatuses({ ...inputs, bgp: this.status.observation }) : [];
  }

  /** Routes in the model BIRD last accepted; undefined before it accepted one. */
  get exportedRoutes(): ExportedRoutes | undefined {
    return this.exported;
  }

  /** The last model handed to BIRD. */
  get birdModel() {
    return this.announcer.model;
  }

  private async begin(): Promise<void> {
    if (this.stopped || this.live) return;
    const { settings } = this.deps;
    await this.refreshTask.trigger();
    this.live = true;
    await this.sweepNow('pod cache synced');
    await this.passTask.trigger();
    const every = (ms: number, fn: () => void) => {
      const t = setInterval(fn, ms);
      this.cleanups.push(() => clearInterval(t));
    };
    every(settings.anycastPeriodMs, () => void this.passTask.trigger());
    every(settings.sweepPeriodMs, () => {
      void this.sweepNow('periodic');
      void this.refreshTask.trigger();
    });
  }

  private sweepSoon(trigger: string): void {
    if (!this.live) return;
    this.sweepTrigger = trigger;
    this.sweepTask.schedule(0);
  }

  private async sweep(): Promise<void> {
    if (!this.live) return;
    const result = await this.sweeper.sweep(this.sweepTrigger);
    for (const r of result.removed) this.deps.metrics?.orphanRemovals.inc({ reason: r.reason });
    this.sweepTrigger = 'periodic';
    if (result.nextEligibleAt !== undefined) {
      const now = this.deps.now?.() ?? Date.now();
      this.sweepTrigger = 'grace period over';
      this.sweepTask.schedule(Math.max(0, result.nextEligibleAt - now) + 100);
    }
  }

  /** Re-read the peers' Secrets and the router ID, then re-plan. */
  private async refresh(): Promise<void> {
    const state = this.deps.nodeConfig.current();
    if (!state) return this.status.refresh();
    const { spec } = state.nodeConfig;
    const { settings, logger, nodeName } = this.deps;
    const before = this.peers;
    if ((!settings.routerIdOverride && !spec.bgp.routerID) || spec.bgp.peers.some(needsBfdSource)) {
      try {
        this.nodeAddresses = await readNodeAddresses(this.deps.transport, nodeName);
      } catch (error) {
        logger.warn('cannot read the Node for its address; router ID and BFD sources unchanged', {
          error: String(error),
        });
      }
    }
    // Before the passwords: a multihop BFD peer is only valid for BIRD with its source.
    const sourced = withBfdSources(spec.bgp.peers, this.nodeAddresses);
    const bfdWarnings = sourced.warnings.join('\n');
    if (bfdWarnings && bfdWarnings !== this.bfdWarnings)
      for (const note of sourced.warnings) {
        logger.warn(note);
        this.deps.warn?.('BfdNotConfigured', note);
      }
    this.bfdWarnings = bfdWarnings;
    this.peers = await this.passwords.resolve(sourced.peers);
    for (const w of peerWarnings(before, this.peers)) this.deps.warn?.(w.reason, w.note);
    const choice = chooseRouterId({
      override: settings.routerIdOverride,
      specRouterId: spec.bgp.routerID,
      nodeAddresses: this.nodeAddresses,
      nodeName,
    });
    if (choice.routerId !== this.routerId?.routerId) logRouterId(logger, nodeName, choice);
    this.routerId = choice;
    this.changed();
  }

  private async pass(): Promise<void> {
    const state = this.deps.nodeConfig.current();
    if (!this.live || !state) return;
    const spec = state.nodeConfig.spec;
    const plan = planAnnouncements({
      spec,
      entries: this.deps.store.entries(),
      podOf: (namespace, name) => this.deps.pods.getObject(name, namespace),
    });
    this.plan = plan;
    const warnings = plan.warnings.join('\n');
    if (warnings !== this.warnings && plan.warnings.length)
      this.deps.logger.warn('addresses left out of routes and announcements', {
        warnings: plan.warnings,
      });
    this.warnings = warnings;
    if (this.routerId) {
      const model = toBirdModel({
        plan,
        spec,
        routerId: this.routerId.routerId,
        peers: this.peers.peers,
      });
      this.announcedPlan = plan;
      // With a BFD speaker, BFD runs there and the BGP BIRD runs none of it.
      this.announcer.announce(this.bfdAnnouncer ? withoutBfd(model) : model);
      this.bfdAnnouncer?.announce(model);
    }
    await this.anycast.reconcile();
    this.status.refresh();
  }

  /** BIRD runs the model of announcedPlan. */
  private applied(): void {
    const plan = this.announcedPlan;
    if (!plan) return;
    this.exported = {
      aggregate: plan.aggregates.length,
      pinned: plan.hostRoutes.length,
      anycast: plan.anycast.size,
    };
    this.exportLatency.applied(plan, this.deps.store.entries(), this.deps.now?.() ?? Date.now());
  }

  private statusInputs() {
    const object = this.deps.nodeConfig.cache.getObject(this.deps.nodeName);
    if (!object) return undefined;
    const model = this.announcer.model;
    return {
      ...(object.metadata.generation === undefined
        ? {}
        : { generation: object.metadata.generation }),
      ...(this.deps.nodeConfig.current()
        ? {}
        : {
            unusable:
              "the agent cannot use this NodeConfig's address ranges; the agent log says why",
          }),
      announcer: this.announcer.state,
      configuredPeers: object.spec.bgp.peers,
      peers: this.peers.peers,
      peerProblems: this.peers.problems,
      stalePasswords: this.peers.stale,
      entries: this.deps.store.entries(),
      anycastAnnounced: this.plan?.anycast.size ?? 0,
      ...(model ? { advertisedRoutes: advertisedCount(model) } : {}),
      ...(this.version ? { agentVersion: this.version } : {}),
    };
  }
}

/** The agent's version for status.agentVersion; a status without it beats no status. */
function statusVersion(): string | undefined {
  try {
    return agentVersion();
  } catch {
    return undefined;
  }
}
