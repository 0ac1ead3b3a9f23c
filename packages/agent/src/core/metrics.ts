// The agent's Prometheus metrics (prefix flock_agent_), all in the one registry its health server
// serves. Events are counted where they happen (CNI requests, BIRD reloads, policy passes,
// orphan removals, loop runs); states (BGP sessions, routes exported, addresses, policy) are
// read from the running agent at each scrape through an AgentView, so they are never stale.
import { programsRun } from '@flock/exec';
import { LoopMetrics, type MetricsOptions } from '@flock/kube';
import {
  collectDefaultMetrics,
  Counter,
  Gauge,
  Histogram,
  type LabelValues,
  type Registry,
} from 'prom-client';

export const AGENT_METRICS_PREFIX = 'flock_agent_';
const p = AGENT_METRICS_PREFIX;

/** One BGP session as the agent last saw it in BIRD. */
export interface PeerView {
  address: string;
  asn?: number;
  state: string;
  /** Seconds since the session reached its state (undefined: BIRD did not say). */
  sinceSeconds?: number;
  routesExported?: number;
}

export interface AddressView {
  family: 'ipv6' | 'ipv4';
  used: number;
  free: number;
  quarantined: number;
  /** Quarantines ended early since the allocator began: a namespace had its share quarantined. */
  quarantineCut: number;
}

/** What the metrics read from the running agent at scrape time. */
export interface AgentView {
  peers(): readonly PeerView[];
  /** Routes in the model BIRD accepted, by class; undefined before BIRD accepted one. */
  routesExported():
    { aggregate: number; pinned: number; anycast: number; services: number } | undefined;
  /** The announcer's state (idle, applied, unreachable, failed, refused, invalid). */
  birdState(): string;
  addresses(): readonly AddressView[];
  /** The last NetworkPolicy result; undefined before the first pass or without enforcement. */
  policy(): { ok: boolean; reason: string; rules?: number; pods?: number } | undefined;
  /** Packets NetworkPolicy dropped per local pod and direction (running totals). */
  droppedPackets?(): Promise<
    readonly { namespace: string; pod: string; direction: string; packets: number }[]
  >;
}

const SHORT_BUCKETS = [0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5];
const EXPORT_BUCKETS = [0.05, 0.1, 0.25, 0.5, 1, 2, 5, 10, 30, 60, 120, 300];

export class AgentMetrics {
  /** For @flock/kube's caches and loops: the same registry and prefix. */
  readonly options: MetricsOptions;
  readonly loops: LoopMetrics;
  readonly cniRequests: Counter<'command' | 'result'>;
  readonly cniDuration: Histogram<'command' | 'result'>;
  readonly cniErrors: Counter<'command' | 'code'>;
  readonly birdReloads: Counter<'result'>;
  readonly birdReloadDuration: Histogram<'result'>;
  readonly addToExport: Histogram<'class'>;
  readonly policyPassDuration: Histogram<'result'>;
  readonly policyApplyErrors: Counter<'reason'>;
  readonly peerAddressesIgnored: Counter;
  readonly orphanRemovals: Counter<'reason'>;
  private view: AgentView | undefined;

  constructor(registry: Registry, options: { processMetrics?: boolean } = {}) {
    this.options = { registry, prefix: p };
    this.loops = new LoopMetrics(this.options);
    const registers = [registry];
    if (options.processMetrics ?? true) collectDefaultMetrics({ register: registry, prefix: p });
    this.cniRequests = new Counter({
      name: `${p}cni_requests_total`,
      help: 'CNI requests by command (ADD, DEL, CHECK, STATUS, GC, VERSION) and result (ok, error).',
      labelNames: ['command', 'result'],
      registers,
    });
    this.cniDuration = new Histogram({
      name: `${p}cni_duration_seconds`,
      help: 'Time the agent spent on a CNI command (socket request to reply).',
      labelNames: ['command', 'result'],
      buckets: SHORT_BUCKETS,
      registers,
    });
    this.cniErrors = new Counter({
      name: `${p}cni_errors_total`,
      help: 'CNI commands answered with an error, by CNI error code.',
      labelNames: ['command', 'code'],
      registers,
    });
    this.birdReloads = new Counter({
      name: `${p}bird_reloads_total`,
      help: 'BIRD reloads (configure) by result: ok, refused, unreachable, error.',
      labelNames: ['result'],
      registers,
    });
    this.birdReloadDuration = new Histogram({
      name: `${p}bird_reload_duration_seconds`,
      help: "Time one BIRD reload took (the control socket's configure), by result.",
      labelNames: ['result'],
      buckets: SHORT_BUCKETS,
      registers,
    });
    this.addToExport = new Histogram({
      name: `${p}add_to_export_seconds`,
      help: 'Time from a CNI ADD committing an address to BIRD accepting a config announcing it, by class (pinned, anycast).',
      labelNames: ['class'],
      buckets: EXPORT_BUCKETS,
      registers,
    });
    this.policyPassDuration = new Histogram({
      name: `${p}policy_pass_duration_seconds`,
      help: 'Time one NetworkPolicy pass took (build, translate, render, nft apply), by result.',
      labelNames: ['result'],
      buckets: SHORT_BUCKETS,
      registers,
    });
    new Counter({
      name: `${p}commands_total`,
      help: 'Programs the agent ran (ip, nft, birdc, ...), by program: a process started each.',
      labelNames: ['program'],
      registers,
      collect() {
        this.reset();
        for (const [program, n] of programsRun()) this.inc({ program }, n);
      },
    });
    this.policyApplyErrors = new Counter({
      name: `${p}policy_apply_errors_total`,
      help: 'NetworkPolicy passes that left the previous table in force, by reason (ApplyFailed: nft; TranslateFailed).',
      labelNames: ['reason'],
      registers,
    });
    this.peerAddressesIgnored = new Counter({
      name: `${p}peer_addresses_ignored_total`,
      help: "Peer pods' status.podIPs NetworkPolicy left out: outside the pod ranges of the pod's node (or a pinned address the pod does not hold), counted once per pod and address.",
      registers,
    });
    this.orphanRemovals = new Counter({
      name: `${p}orphan_sweep_removals_total`,
      help: "Allocations the orphan sweep tore down, by why (their pod was not live; sandbox-gone: the pod lives but that sandbox's veth is gone; teardown-retry: an earlier teardown failed half-way).",
      labelNames: ['reason'],
      registers,
    });
    // Series that exist before their first event: a series born at 1 hides that first event
    // from rate() and increase() (Prometheus has no sample before it), and a dashboard panel of
    // a quiet node would show nothing instead of 0.
    for (const result of ['ok', 'refused', 'unreachable', 'error']) {
      this.birdReloads.inc({ result }, 0);
      this.birdReloadDuration.zero({ result });
    }
    for (const reason of ['ApplyFailed', 'TranslateFailed'])
      this.policyApplyErrors.inc({ reason }, 0);
    for (const result of ['ok', 'not-enforceable', 'error'])
      this.policyPassDuration.zero({ result });
    for (const cls of ['pinned', 'anycast']) this.addToExport.zero({ class: cls });
    this.collected(registers);
    const self = (): AgentView | undefined => this.view;
    const drops: Counter<'namespace' | 'pod' | 'direction'> = new Counter({
      name: `${p}policy_dropped_packets_total`,
      help: "Packets NetworkPolicy dropped, per local pod and direction (its chain's counted drop).",
      labelNames: ['namespace', 'pod', 'direction'],
      registers,
      async collect() {
        const view = self();
        if (!view?.droppedPackets) return;
        const now = await view.droppedPackets();
        drops.reset();
        for (const d of now)
          drops.inc({ namespace: d.namespace, pod: d.pod, direction: d.direction }, d.packets);
      },
    });
    const cut: Counter<'family'> = new Counter({
      name: `${p}address_quarantine_cut_total`,
      help: "Released addresses whose quarantine ended early because their namespace already had its share of the node's prefix quarantined (--address-quarantine-share).",
      labelNames: ['family'],
      registers,
      collect() {
        const view = self();
        if (!view) return;
        cut.reset();
        for (const a of view.addresses()) cut.inc({ family: a.family }, a.quarantineCut);
      },
    });
  }

  /** Read states from the running agent from now on. */
  observe(view: AgentView): void {
    this.view = view;
  }

  /** Gauges computed at scrape time from the AgentView. */
  private collected(registers: Registry[]): void {
    const gauge = <L extends string>(
      name: string,
      help: string,
      labelNames: L[],
      fill: (set: (labels: LabelValues<L>, value: number) => void, view: AgentView) => void,
    ) => {
      const self = (): AgentView | undefined => this.view;
      const g: Gauge<L> = new Gauge<L>({
        name: `${p}${name}`,
        help,
        labelNames,
        registers,
        collect() {
          g.reset();
          const view = self();
          if (view) fill((labels, value) => g.set(labels, value), view);
        },
      });
    };
    gauge(
      'bgp_session_up',
      '1 while the BGP session to the peer is Established.',
      ['peer', 'asn'],
      (set, v) => {
        for (const peer of v.peers())
          set(
            { peer: peer.address, asn: String(peer.asn ?? '') },
            peer.state === 'Established' ? 1 : 0,
          );
      },
    );
    gauge(
      'bgp_session_state',
      'The BGP state of each peer as BIRD reports it (1 for the current state).',
      ['peer', 'state'],
      (set, v) => {
        for (const peer of v.peers()) set({ peer: peer.address, state: peer.state }, 1);
      },
    );
    gauge(
      'bgp_session_uptime_seconds',
      'Seconds the BGP session has been Established (0 while it is not).',
      ['peer'],
      (set, v) => {
        for (const peer of v.peers())
          set({ peer: peer.address }, peer.state === 'Established' ? (peer.sinceSeconds ?? 0) : 0);
      },
    );
    gauge(
      'bgp_peer_routes_exported',
      'Routes BIRD exports to the peer (its channels summed).',
      ['peer'],
      (set, v) => {
        for (const peer of v.peers()) set({ peer: peer.address }, peer.routesExported ?? 0);
      },
    );
    gauge(
      'routes_exported',
      'Routes in the config BIRD accepted, by class (aggregate, pinned: host routes, anycast, services: Service addresses and CIDRs).',
      ['class'],
      (set, v) => {
        const r = v.routesExported();
        if (!r) return;
        for (const [k, n] of Object.entries(r)) set({ class: k }, n);
      },
    );
    gauge(
      'bird_state',
      "1 for the announcer's current state (idle, applied, unreachable, failed, refused, invalid).",
      ['state'],
      (set, v) => {
        set({ state: v.birdState() }, 1);
      },
    );
    gauge(
      'addresses',
      "Addresses of this node's prefixes by family and state (used, free, quarantined).",
      ['family', 'state'],
      (set, v) => {
        for (const a of v.addresses()) {
          set({ family: a.family, state: 'used' }, a.used);
          set({ family: a.family, state: 'free' }, a.free);
          set({ family: a.family, state: 'quarantined' }, a.quarantined);
        }
      },
    );
    gauge(
      'policy_applied',
      '1 while every NetworkPolicy selecting a local pod is in force as written.',
      [],
      (set, v) => {
        const r = v.policy();
        if (r) set({}, r.ok ? 1 : 0);
      },
    );
    gauge('policy_rules', 'Allow rules in the NetworkPolicy table last applied.', [], (set, v) => {
      const r = v.policy();
      if (r?.rules !== undefined) set({}, r.rules);
    });
  }
}

/** Seconds since BIRD's `since` ("YYYY-MM-DD hh:mm:ss", timeformat iso long, local time). */
export function secondsSince(since: string | undefined, now: number): number | undefined {
  const m = since && /^(\d{4}-\d{2}-\d{2}) (\d{2}:\d{2}:\d{2}(?:\.\d+)?)$/.exec(since);
  if (!m) return undefined;
  const at = new Date(`${m[1]}T${m[2]}`).getTime();
  return Number.isNaN(at) ? undefined : Math.max(0, (now - at) / 1000);
}
