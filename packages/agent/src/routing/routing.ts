// The node's routing side, wired together: BIRD announcements, anycast routes, the orphan
// sweep and NodeConfig status. Nothing is announced, routed or swept before this node's pod
// cache has synced: an empty cache would look like "every pod is gone" and withdraw the node's
// pinned and anycast addresses at each agent restart.
//
// Triggers: changed() (every ADD/DEL through CniHooks.changed, every sweep), pod cache events
// that change a pod's UID, phase or readiness, NodeConfig events (also re-read the peers'
// Secrets and the router ID), a short tick (anycast period, default 2 s) and the sweep period
// (default 30 s: sweep, Secrets, router ID). Pod deletions sweep at once. Each job is one Loop
// (@flock/kube): announcements (the pass), orphan-sweep and bgp-peers (the refresh).
import { Loop } from '@flock/kube';
import { fetchPod } from '../node/pods.js';
import { agentVersion } from '../core/version.js';
import {
  advertisedCount,
  planAnnouncements,
  toBirdModel,
  type AnnouncementPlan,
} from './announcements.js';
import { AnycastReconciler } from './anycast-reconciler.js';
import { BirdAnnouncer } from './announcer.js';
import { BfdSpeaker } from './bfd-speaker.js';
import { BgpPeers } from './bgp-peers.js';
import { ExportLatency } from './export-latency.js';
import { entryLiveness, livenessSignature } from '../node/liveness.js';
import { OrphanSweeper } from '../cni/orphan-sweep.js';
import type { ExportedRoutes, RoutingDeps } from './routing-deps.js';
import { bgpPeerStatuses, type PeerStatus } from '../node-status/status-compute.js';
import { NodeStatusReporter } from '../node-status/status-reporter.js';
import { timedReloads } from './timed-reloads.js';

export class Routing {
  readonly status: NodeStatusReporter;
  private readonly announcer: BirdAnnouncer;
  private readonly bfd: BfdSpeaker | undefined;
  private readonly anycast: AnycastReconciler;
  private readonly sweeper: OrphanSweeper;
  private readonly bgp: BgpPeers;
  private readonly passLoop: Loop;
  private readonly sweepLoop: Loop;
  private readonly refreshLoop: Loop;
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
    const { metrics } = deps;
    const loop = (name: string, what: string, sync: () => Promise<void>, periodMs: number) =>
      new Loop({
        name,
        sync,
        periodMs,
        ...(metrics ? { metrics: metrics.loops } : {}),
        onError: (error) => logger.error(`${what} failed`, { error: String(error) }),
      });
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
    if (settings.bfdConfigPath && deps.bfd)
      this.bfd = new BfdSpeaker(settings.bfdConfigPath, deps.bfd, logger);
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
    this.bgp = new BgpPeers({
      nodeName: deps.nodeName,
      transport: deps.transport,
      logger,
      routerIdOverride: settings.routerIdOverride,
      secretNamespace: settings.secretNamespace,
      passwordFile: settings.passwordFile,
      readSecret: deps.readSecret,
      warn: deps.warn,
    });
    this.passLoop = loop(
      'announcements',
      'announcement pass',
      () => this.pass(),
      settings.anycastPeriodMs,
    );
    this.sweepLoop = loop(
      'orphan-sweep',
      'orphan sweep',
      () => this.sweep(),
      settings.sweepPeriodMs,
    );
    this.refreshLoop = loop(
      'bgp-peers',
      'BGP peer refresh',
      () => this.refresh(),
      settings.sweepPeriodMs,
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
    if (this.live) this.passLoop.trigger(20);
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
          onAdd: () => this.refreshLoop.trigger(),
          // Only a new spec (generation) or a re-created object: not our own status writes.
          onUpdate: (old, nc) => {
            if (
              old.metadata.generation !== nc.metadata.generation ||
              old.metadata.uid !== nc.metadata.uid
            )
              this.refreshLoop.trigger();
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
    await Promise.all([this.passLoop.stop(), this.sweepLoop.stop(), this.refreshLoop.stop()]);
    await this.announcer.close();
    await this.bfd?.close();
    await this.status.stop();
  }

  /** Run one announcement + anycast pass now (tests, and the tick). */
  reconcileNow(): Promise<void> {
    return settled(this.passLoop.run());
  }

  /** Run one orphan sweep now. */
  sweepNow(trigger = 'requested'): Promise<void> {
    this.sweepTrigger = trigger;
    return settled(this.sweepLoop.run());
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
    await settled(this.refreshLoop.run());
    this.live = true;
    await this.sweepNow('pod cache synced');
    await this.reconcileNow();
    for (const l of [this.passLoop, this.sweepLoop, this.refreshLoop]) l.start();
  }

  private sweepSoon(trigger: string): void {
    if (!this.live) return;
    this.sweepTrigger = trigger;
    this.sweepLoop.trigger();
  }

  private async sweep(): Promise<void> {
    if (!this.live) return;
    const result = await this.sweeper.sweep(this.sweepTrigger);
    for (const r of result.removed) this.deps.metrics?.orphanRemovals.inc({ reason: r.reason });
    this.sweepTrigger = 'periodic';
    if (result.nextEligibleAt !== undefined) {
      const now = this.deps.now?.() ?? Date.now();
      this.sweepTrigger = 'grace period over';
      this.sweepLoop.trigger(Math.max(0, result.nextEligibleAt - now) + 100);
    }
  }

  /** Re-read the peers' Secrets and the router ID, then re-plan. */
  private async refresh(): Promise<void> {
    const state = this.deps.nodeConfig.current();
    if (!state) return this.status.refresh();
    await this.bgp.refresh(state.nodeConfig.spec);
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
    const routerId = this.bgp.routerId;
    if (routerId) {
      const model = toBirdModel({
        plan,
        spec,
        routerId: routerId.routerId,
        peers: this.bgp.peers.peers,
      });
      this.announcedPlan = plan;
      // With a BFD speaker, BFD runs there and the BGP BIRD runs none of it.
      this.announcer.announce(this.bfd ? this.bfd.announce(model) : model);
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
      peers: this.bgp.peers.peers,
      peerProblems: this.bgp.peers.problems,
      stalePasswords: this.bgp.peers.stale,
      entries: this.deps.store.entries(),
      anycastAnnounced: this.plan?.anycast.size ?? 0,
      ...(model ? { advertisedRoutes: advertisedCount(model) } : {}),
      ...(this.version ? { agentVersion: this.version } : {}),
    };
  }
}

/** A loop run's end, whatever its outcome (failures are logged by the loop's onError). */
const settled = (run: Promise<unknown>): Promise<void> =>
  run.then(
    () => undefined,
    () => undefined,
  );

/** The agent's version for status.agentVersion; a status without it beats no status. */
function statusVersion(): string | undefined {
  try {
    return agentVersion();
  } catch {
    return undefined;
  }
}
