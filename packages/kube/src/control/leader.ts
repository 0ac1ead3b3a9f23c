// Lease-based leader election, like client-go's leaderelection: candidates try to take the
// Lease every retryPeriod; the holder renews it every retryPeriod and stops leading the moment
// it has not renewed for renewDeadline (a timer, so a hung request cannot keep a stale leader
// alive) or sees another holder. A lease counts as expired leaseDuration after this process
// last saw it change (its own clock, not the writer's). stop() releases the lease so a standby
// takes over at once instead of waiting for it to expire.
import type { Gauge } from 'prom-client';
import { sleep, systemClock, type Clock, type Random, type TimerHandle } from '../core/clock.js';
import { errorMessage } from '../core/errors.js';
import type { LeaseRecord, LeaseSpec, LeaseStore } from './lease-store.js';
import { microTime } from './lease-store.js';
import type { Logger } from '../core/logger.js';
import { gauge, type MetricsOptions } from '../core/metrics.js';

interface LeaderElectionOptions {
  store: LeaseStore;
  /** Unique per process (e.g. pod name + random suffix): two processes must never share it. */
  identity: string;
  /** How long a lease is valid without renewal (default 15 s). */
  leaseDurationMs?: number;
  /** The leader gives up if it could not renew for this long (default 10 s). */
  renewDeadlineMs?: number;
  /** Interval between attempts to acquire or renew (default 2 s, jittered up to +20% for candidates). */
  retryPeriodMs?: number;
  /** Called on becoming leader; `signal` aborts the moment leadership is lost. */
  onStartedLeading: (signal: AbortSignal) => void | Promise<void>;
  /** Called after leadership is lost or given up; awaited before the lease is released. */
  onStoppedLeading?: () => void | Promise<void>;
  /** Called when the observed holder changes (including to this process). */
  onNewLeader?: (identity: string) => void;
  logger: Logger;
  metrics?: MetricsOptions;
  clock?: Clock;
  random?: Random;
}

type Attempt = 'acquired' | 'held-by-other' | 'failed';

export class LeaderElector {
  private readonly leaseMs: number;
  private readonly deadlineMs: number;
  private readonly retryMs: number;
  private readonly clock: Clock;
  private readonly random: Random;
  private readonly log: Logger;
  private readonly isLeaderGauge: Gauge | undefined;

  private state: 'new' | 'running' | 'stopped' = 'new';
  private loop: Promise<void> | undefined;
  private readonly stopAbort = new AbortController();
  private leading: AbortController | undefined;
  private stoppedLeading: Promise<void> = Promise.resolve();
  private deadlineTimer: TimerHandle | undefined;
  private observed: LeaseRecord | undefined;
  private observedAt = 0;

  constructor(private readonly options: LeaderElectionOptions) {
    this.leaseMs = options.leaseDurationMs ?? 15_000;
    this.deadlineMs = options.renewDeadlineMs ?? 10_000;
    this.retryMs = options.retryPeriodMs ?? 2_000;
    if (!options.identity) throw new Error('leader election needs an identity');
    if (!(
      this.leaseMs > this.deadlineMs &&
      this.deadlineMs > this.retryMs * 1.2 &&
      this.retryMs > 0
    )) {
      throw new Error(
        `leader election needs leaseDuration > renewDeadline > 1.2 × retryPeriod > 0, got ${this.leaseMs}/${this.deadlineMs}/${this.retryMs} ms`,
      );
    }
    this.clock = options.clock ?? systemClock;
    this.random = options.random ?? Math.random;
    this.log = options.logger;
    this.isLeaderGauge = options.metrics
      ? gauge(options.metrics, 'leader_is_leader', '1 while this process holds the lease.', [
          'lease',
        ])
      : undefined;
    this.isLeaderGauge?.set({ lease: options.store.description }, 0);
  }

  /** True only while this process holds a lease it renewed less than renewDeadline ago. */
  isLeader(): boolean {
    return this.leading !== undefined;
  }

  /** The holder this process last saw in the lease ('' if none). */
  get leader(): string {
    return this.observed?.spec.holderIdentity ?? '';
  }

  start(): void {
    if (this.state !== 'new') throw new Error('leader elector was already started');
    this.state = 'running';
    this.loop = this.run().catch((err: unknown) =>
      this.log.error('leader election loop crashed', { err: errorMessage(err) }),
    );
  }

  /** Stop leading (awaiting onStoppedLeading), release the lease if held, stop competing. */
  async stop(): Promise<void> {
    if (this.state === 'stopped') return this.loop;
    const wasStarted = this.state === 'running';
    this.state = 'stopped';
    this.stopAbort.abort();
    this.loseLeadership('stopping');
    await this.loop;
    await this.stoppedLeading;
    // Also when not leading: an attempt may have taken the lease just as stop() was called.
    if (wasStarted) await this.release();
  }

  private get stopped(): boolean {
    return this.state === 'stopped';
  }

  private async run(): Promise<void> {
    const desc = { lease: this.options.store.description, identity: this.options.identity };
    while (!this.stopped) {
      const started = this.clock.now();
      const attempt = await this.tryAcquireOrRenew(this.stopAbort.signal);
      if (this.stopped) return;
      if (attempt !== 'acquired') {
        await sleep(this.retryMs * (1 + 0.2 * this.random()), this.clock, this.stopAbort.signal);
        continue;
      }
      this.log.info('became leader', desc);
      this.becomeLeader(started);
      await this.renewWhileLeading();
      await this.stoppedLeading;
    }
  }

  private becomeLeader(renewedAt: number): void {
    const leading = new AbortController();
    this.leading = leading;
    this.isLeaderGauge?.set({ lease: this.options.store.description }, 1);
    this.armDeadline(renewedAt);
    this.stoppedLeading = new Promise<void>((resolve) => {
      leading.signal.addEventListener('abort', () => {
        Promise.resolve()
          .then(() => this.options.onStoppedLeading?.())
          .catch((err: unknown) =>
            this.log.error('onStoppedLeading failed', { err: errorMessage(err) }),
          )
          .finally(resolve);
      });
    });
    Promise.resolve()
      .then(() => this.options.onStartedLeading(leading.signal))
      .catch((err: unknown) =>
        this.log.error('onStartedLeading failed', { err: errorMessage(err) }),
      );
  }

  /** Renew every retryPeriod until leadership is lost or the elector stops. */
  private async renewWhileLeading(): Promise<void> {
    for (;;) {
      const leading = this.leading;
      if (!leading) return;
      await sleep(this.retryMs, this.clock, leading.signal);
      if (this.leading !== leading) return;
      const started = this.clock.now();
      const attempt = await this.tryAcquireOrRenew(leading.signal);
      if (this.leading !== leading) return; // lost meanwhile (deadline, or stop)
      if (attempt === 'acquired') this.armDeadline(started);
      else if (attempt === 'held-by-other') this.loseLeadership('another holder took the lease');
      // 'failed': try again after retryPeriod; the deadline timer decides when to give up.
    }
  }

  /** Leadership ends renewDeadline after the start of the last successful renewal. */
  private armDeadline(renewedAt: number): void {
    this.clock.clearTimeout(this.deadlineTimer);
    const wait = renewedAt + this.deadlineMs - this.clock.now();
    this.deadlineTimer = this.clock.setTimeout(
      () => this.loseLeadership(`could not renew for ${this.deadlineMs} ms`),
      Math.max(0, wait),
    );
  }

  private loseLeadership(why: string): void {
    const leading = this.leading;
    if (!leading) return;
    this.leading = undefined;
    this.clock.clearTimeout(this.deadlineTimer);
    this.isLeaderGauge?.set({ lease: this.options.store.description }, 0);
    const meta = { lease: this.options.store.description, identity: this.options.identity, why };
    if (why === 'stopping') this.log.info('stopped leading', meta);
    else this.log.warn('lost leadership', meta);
    leading.abort(); // synchronously: the leader stops acting now
  }

  private async tryAcquireOrRenew(signal: AbortSignal): Promise<Attempt> {
    const { store, identity } = this.options;
    try {
      let current = await store.get(signal);
      const now = this.clock.now();
      if (!current) {
        current = await store.create(this.takeSpec(now, undefined), signal);
        this.observe(current, this.clock.now());
        return 'acquired';
      }
      this.observe(current, now);
      const holder = current.spec.holderIdentity ?? '';
      const validMs = (current.spec.leaseDurationSeconds ?? this.leaseMs / 1000) * 1000;
      if (holder && holder !== identity && this.observedAt + validMs > now) return 'held-by-other';
      const spec =
        holder === identity
          ? { ...current.spec, renewTime: microTime(now), leaseDurationSeconds: this.leaseSeconds }
          : this.takeSpec(now, current.spec);
      const updated = await store.update(current, spec, signal);
      this.observe(updated, this.clock.now());
      return 'acquired';
    } catch (err) {
      if (!signal.aborted) {
        this.log.debug('lease attempt failed', {
          lease: store.description,
          err: errorMessage(err),
        });
      }
      return 'failed';
    }
  }

  private get leaseSeconds(): number {
    return Math.max(1, Math.ceil(this.leaseMs / 1000));
  }

  private takeSpec(now: number, previous: LeaseSpec | undefined): LeaseSpec {
    return {
      holderIdentity: this.options.identity,
      leaseDurationSeconds: this.leaseSeconds,
      acquireTime: microTime(now),
      renewTime: microTime(now),
      leaseTransitions: previous ? (previous.leaseTransitions ?? 0) + 1 : 0,
    };
  }

  /** Remember when the lease last changed, by our clock (expiry is judged from that). */
  private observe(record: LeaseRecord, now: number): void {
    const prev = this.observed;
    if (prev?.resourceVersion !== record.resourceVersion) {
      this.observed = record;
      this.observedAt = now;
    }
    const holder = record.spec.holderIdentity ?? '';
    if (holder && holder !== (prev?.spec.holderIdentity ?? '')) {
      this.log.info('lease holder changed', { lease: this.options.store.description, holder });
      try {
        this.options.onNewLeader?.(holder);
      } catch (err) {
        this.log.error('onNewLeader failed', { err: errorMessage(err) });
      }
    }
  }

  /** Give the lease up so a standby can take it at once (only if we still hold it). */
  private async release(): Promise<void> {
    const { store, identity } = this.options;
    try {
      const current = await store.get();
      if (!current || current.spec.holderIdentity !== identity) return;
      const now = microTime(this.clock.now());
      await store.update(current, {
        ...current.spec,
        holderIdentity: '',
        leaseDurationSeconds: 1,
        acquireTime: now,
        renewTime: now,
      });
      this.log.info('released the lease', { lease: store.description, identity });
    } catch (err) {
      this.log.warn('could not release the lease; it will expire', {
        lease: store.description,
        err: errorMessage(err),
      });
    }
  }
}
