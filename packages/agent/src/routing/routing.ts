// The node's routing side, wired together: BIRD announcements (and the BFD speaker's), anycast
// routes, the BGP peers and router ID, and the poll of BIRD's sessions. Nothing is announced or
// routed before this node's pod cache has synced: an empty cache would look like "every pod is
// gone" and withdraw the node's pinned and anycast addresses at each agent restart.
//
// Triggers: changed() (every ADD/DEL through CniHooks.changed), pod cache events that change a
// pod's UID, phase or readiness, NodeConfig events and changes of the Node's addresses (also
// re-read the peers' Secrets and the router ID), a short tick (anycast period, default 2 s) and
// the refresh period (default 30 s: Secrets, router ID). The Node is read from the agent's watch
// of it, no GET per refresh once that has synced. Each job is one Loop (@flock/kube):
// announcements (the pass) and bgp-peers (the refresh). Listeners of onChange() hear of every
// new state (the NodeConfig status writer).
import type { NodeConfigSpec } from '@flock/api';
import { Loop } from '@flock/kube';
import { steadyNow } from '@flock/ipam';
import { settled, type Component } from '../core/lifecycle.js';
import { livenessSignature } from '../node/liveness.js';
import { whenSynced } from '../node/pods.js';
import { planAnnouncements, toBirdModel, type AnnouncementPlan } from './announcements.js';
import { capHostRoutes } from './host-route-cap.js';
import { AnycastReconciler } from './anycast-reconciler.js';
import { BirdAnnouncer, type AnnouncerState } from './announcer.js';
import { BfdSpeaker } from './bfd-speaker.js';
import { BgpPeers } from './bgp-peers.js';
import type { NodeObject } from './router-id.js';
import { ExportLatency } from './export-latency.js';
import type { ExportedRoutes, RoutingDeps } from './routing-deps.js';
import { SessionPoll, type BgpObservation } from './session-poll.js';
import { kubeProxyHealthCheck } from './kube-proxy-health.js';
import { ServiceAnnouncements } from './service-announcements.js';
import { timedReloads } from './timed-reloads.js';

export class Routing implements Component {
  readonly name = 'announcements and anycast routes';
  private readonly announcer: BirdAnnouncer;
  private readonly bfd: BfdSpeaker | undefined;
  private readonly anycast: AnycastReconciler;
  private readonly bgp: BgpPeers;
  private readonly sessions: SessionPoll;
  /** Service addresses (absent without the Service caches). */
  private readonly services: ServiceAnnouncements | undefined;
  private readonly passLoop: Loop;
  private readonly refreshLoop: Loop;
  private plan: AnnouncementPlan | undefined;
  /** The plan of the last model handed to BIRD, and the routes of the last one BIRD ran. */
  private announcedPlan: AnnouncementPlan | undefined;
  private exported: ExportedRoutes | undefined;
  private readonly exportLatency: ExportLatency;
  private readonly listeners: (() => void)[] = [];
  private readonly appliedListeners: ((hostRoutes: readonly string[]) => void)[] = [];
  private warnings = '';
  /** Whether the last plan was capped (the Event is recorded when the cap starts to bite). */
  private capped = false;
  private live = false;
  private stopped = false;
  private readonly cleanups: (() => void)[] = [];

  constructor(private readonly deps: RoutingDeps) {
    const { logger, settings, metrics } = deps;
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
        this.notify();
      },
    });
    if (settings.bfdConfigPath && deps.bfd)
      this.bfd = new BfdSpeaker(settings.bfdConfigPath, deps.bfd, logger);
    this.anycast = new AnycastReconciler({
      datapath: deps.datapath,
      desired: () => this.plan?.anycast,
      logger,
    });
    this.bgp = new BgpPeers({
      nodeName: deps.nodeName,
      transport: deps.transport,
      node: deps.node,
      logger,
      routerIdOverride: settings.routerIdOverride,
      secretNamespace: settings.secretNamespace,
      passwordFile: settings.passwordFile,
      readSecret: deps.readSecret,
      warn: deps.warn,
    });
    const replan = (delayMs: number) => {
      if (this.live) this.passLoop.trigger(delayMs);
    };
    if (deps.services)
      this.services = new ServiceAnnouncements({
        caches: deps.services,
        claimOf: deps.claimOf,
        logger,
        health: deps.kubeProxyHealth ?? kubeProxyHealthCheck,
        internalIps: () =>
          this.bgp.addresses.filter((a) => a.type === 'InternalIP').map((a) => a.address),
        readKubeProxy: deps.readKubeProxy,
        replan,
      });
    this.sessions = new SessionPoll(deps.bird.status, settings.bgpStatusPeriodMs, () =>
      this.notify(),
    );
    this.passLoop = loop(
      'announcements',
      'announcement pass',
      () => this.pass(),
      settings.anycastPeriodMs,
    );
    this.refreshLoop = loop(
      'bgp-peers',
      'BGP peer refresh',
      () => this.refresh(),
      settings.refreshPeriodMs,
    );
  }

  /** An allocation was committed or removed: re-plan soon (coalesced). */
  changed(): void {
    if (this.live) this.passLoop.trigger(20);
  }

  /** Call `listener` after each change of what routing reports (state, plan, sessions). */
  onChange(listener: () => void): void {
    this.listeners.push(listener);
  }

  /** Call `listener` with the host routes of each model BIRD runs from now on. */
  onApplied(listener: (hostRoutes: readonly string[]) => void): void {
    this.appliedListeners.push(listener);
  }

  /** Start polling BIRD; plan and announce once the pod cache has synced (at once when it has). */
  async start(): Promise<void> {
    const { pods, nodeConfig, logger } = this.deps;
    this.cleanups.push(
      pods.addHandler(
        {
          onAdd: () => this.changed(),
          onUpdate: (old, pod) => {
            if (livenessSignature(old) !== livenessSignature(pod)) this.changed();
          },
          onDelete: () => this.changed(),
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
          onDelete: () => this.notify(),
        },
        { replay: false },
      ),
    );
    // The router ID and BFD sources follow the Node's addresses (not its status heartbeats).
    const addresses = (n: NodeObject) => JSON.stringify(n.status?.addresses ?? []);
    const node = this.deps.node?.addHandler(
      {
        onAdd: () => this.refreshLoop.trigger(),
        onUpdate: (a, b) => void (addresses(a) === addresses(b) || this.refreshLoop.trigger()),
        onDelete: () => this.refreshLoop.trigger(),
      },
      { replay: false },
    );
    if (node) this.cleanups.push(node);
    // Service addresses follow their Services and this node's ready endpoints; a change that
    // keeps what the plan reads (the trimmed views are equal) is none.
    for (const cache of [this.deps.services?.services, this.deps.services?.slices])
      if (cache)
        this.cleanups.push(
          cache.addHandler(
            {
              onAdd: () => this.changed(),
              onUpdate: (a: unknown, b: unknown) => {
                if (JSON.stringify(a) !== JSON.stringify(b)) this.changed();
              },
              onDelete: () => this.changed(),
            },
            { replay: false },
          ),
        );
    this.sessions.start();
    await whenSynced(pods, () => this.begin(), {
      logger,
      waiting: 'announcements and anycast routes',
    });
  }

  async stop(): Promise<void> {
    this.stopped = true;
    this.live = false;
    for (const c of this.cleanups.splice(0)) c();
    await Promise.all([this.passLoop.stop(), this.refreshLoop.stop(), this.sessions.stop()]);
    await this.announcer.close();
    await this.bfd?.close();
  }

  /** Run one announcement + anycast pass now (tests, and the tick). */
  reconcileNow(): Promise<void> {
    return settled(this.passLoop.run());
  }

  /** The current plan (undefined before the pod cache synced). */
  get announcements(): AnnouncementPlan | undefined {
    return this.plan;
  }

  get birdState(): AnnouncerState {
    return this.announcer.state;
  }

  /** The peers given to BIRD, those left out and why, and those on a stale password. */
  get peers() {
    return this.bgp.peers;
  }

  /** BIRD's sessions as last polled. */
  get sessionObservation(): BgpObservation | undefined {
    return this.sessions.observation;
  }

  /** Routes in the model BIRD last accepted; undefined before it accepted one. */
  get exportedRoutes(): ExportedRoutes | undefined {
    return this.exported;
  }

  /** The last model handed to BIRD. */
  get birdModel() {
    return this.announcer.model;
  }

  private notify(): void {
    for (const l of this.listeners) l();
  }

  private async begin(): Promise<void> {
    if (this.stopped || this.live) return;
    await this.deps.claimsReady();
    if (this.stopped) return;
    await settled(this.refreshLoop.run());
    await this.services?.ready(this.deps.nodeConfig.current()?.nodeConfig.spec, () => this.stopped);
    if (this.stopped) return;
    this.live = true;
    await this.reconcileNow();
    for (const l of [this.passLoop, this.refreshLoop]) l.start();
  }

  /** Re-read the peers' Secrets and the router ID, then re-plan. */
  private async refresh(): Promise<void> {
    const state = this.deps.nodeConfig.current();
    if (!state) return this.notify();
    await this.bgp.refresh(state.nodeConfig.spec);
    this.changed();
  }

  private async pass(): Promise<void> {
    const state = this.deps.nodeConfig.current();
    if (!this.live || !state) return;
    const spec = state.nodeConfig.spec;
    const capped = capHostRoutes(
      this.withServices(
        planAnnouncements({
          spec,
          entries: this.deps.store.entries(),
          podOf: (namespace, name) => this.deps.pods.getObject(name, namespace),
          claimOf: this.deps.claimOf,
        }),
        spec,
      ),
      this.deps.settings.maxHostRoutes ?? Infinity,
    );
    const plan = capped.plan;
    if (capped.leftOut.length && !this.capped)
      this.deps.warn?.(
        'HostRouteCapReached',
        `${capped.leftOut.length} addresses not announced: this node is at --max-host-routes (${this.deps.settings.maxHostRoutes})`,
      );
    this.capped = capped.leftOut.length > 0;
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
    this.notify();
  }

  /** The plan with the Service addresses this node announces (none before their caches synced). */
  private withServices(plan: AnnouncementPlan, spec: NodeConfigSpec): AnnouncementPlan {
    const svc = this.services?.plan(spec);
    if (!svc) return plan;
    return {
      ...plan,
      services: svc.addresses,
      warnings: [...plan.warnings, ...svc.warnings].sort(),
    };
  }

  /** BIRD runs the model of announcedPlan. */
  private applied(): void {
    const plan = this.announcedPlan;
    if (!plan) return;
    this.exported = {
      aggregate: plan.aggregates.length,
      pinned: plan.hostRoutes.length,
      anycast: plan.anycast.size,
      services:
        plan.services.size +
        (this.deps.nodeConfig.current()?.nodeConfig.spec.clusterIPCIDRs?.length ?? 0),
    };
    // Entry times are on the store's steady clock.
    this.exportLatency.applied(plan, this.deps.store.entries(), this.deps.now?.() ?? steadyNow());
    for (const l of this.appliedListeners) l(plan.hostRoutes);
  }
}
