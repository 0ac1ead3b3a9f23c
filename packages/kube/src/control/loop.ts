// One reconcile loop in kube-router's style: a sync() that computes and applies the whole
// desired state, run on a periodic tick and on triggers. Runs never overlap; requests during a
// run coalesce into exactly one follow-up run; a failed run is retried with capped exponential
// backoff and jitter (reset by a success); every run is counted and timed (LoopMetrics).
import { Backoff, type BackoffOptions } from '../core/backoff.js';
import { systemClock, type Clock, type Random, type TimerHandle } from '../core/clock.js';
import type { LoopMetrics } from './loop-metrics.js';

/** What sync() is told about the run it does. */
export interface LoopRun {
  /** The periodic tick asked for (this share of) the run: a resync, not a reaction. */
  ticked: boolean;
  /** The run retries a failed one. */
  retry: boolean;
}

export interface LoopOptions<T> {
  /** The `loop` label of its metrics. */
  name: string;
  /** One pass. A rejection counts as a failed run and is retried after the backoff. */
  sync: (run: LoopRun) => Promise<T>;
  /** Resync period; absent: runs only on triggers (and retries). */
  periodMs?: number;
  /** Fraction of the period drawn at random ([p·(1−jitter), p], default 0.1). */
  periodJitter?: number;
  /** Default delay of trigger(): requests within it share one run (default 0). */
  debounceMs?: number;
  /** Retries of failed runs (default 1 s → 30 s, ×2, 20 % jitter); false: no retries. */
  backoff?: BackoffOptions | false;
  metrics?: LoopMetrics;
  /** A run failed (after counting it); `retryInMs` when a retry is scheduled. */
  onError?: (error: unknown, retryInMs: number | undefined) => void;
  /** Timers (tests drive them); default the process clock. */
  clock?: Clock;
  /** Jitter source (default Math.random). */
  random?: Random;
}

interface Waiter<T> {
  resolve: (value: T | undefined) => void;
  reject: (error: unknown) => void;
}

const DEFAULT_BACKOFF: BackoffOptions = { baseMs: 1000, maxMs: 30_000, jitter: 0.2 };

export class Loop<T = void> {
  private readonly clock: Clock;
  private readonly random: Random;
  private readonly backoff: Backoff | undefined;
  private running: Promise<void> | undefined;
  /** A run is requested and has not started. */
  private pending = false;
  private pendingTick = false;
  private pendingRetry = false;
  /** Callers of run() waiting for the next run to start and end. */
  private waiters: Waiter<T>[] = [];
  private due: { timer: TimerHandle; at: number } | undefined;
  private retryTimer: TimerHandle | undefined;
  private tickTimer: TimerHandle | undefined;
  private started = false;
  private stopped = false;
  private count = 0;

  constructor(private readonly options: LoopOptions<T>) {
    this.clock = options.clock ?? systemClock;
    this.random = options.random ?? Math.random;
    if (options.backoff !== false)
      this.backoff = new Backoff(options.backoff ?? DEFAULT_BACKOFF, this.random);
    options.metrics?.declare(options.name);
  }

  /** Runs started so far. */
  get runs(): number {
    return this.count;
  }

  /** Start the periodic tick (the first tick one period from now). Triggers work before it. */
  start(): void {
    if (this.started || this.stopped) return;
    this.started = true;
    this.scheduleTick();
  }

  /**
   * Request a run in `delayMs` (default debounceMs; 0: on the next turn of the event loop, never
   * inside the caller): an earlier pending request wins, so a burst of triggers costs one run.
   * During a run it becomes the one follow-up run.
   */
  trigger(delayMs = this.options.debounceMs ?? 0): void {
    if (this.stopped) return;
    if (delayMs <= 0 && this.running) {
      this.pending = true; // the follow-up run
      return;
    }
    delayMs = Math.max(0, delayMs);
    const at = this.clock.now() + delayMs;
    if (this.due && this.due.at <= at) return;
    this.clock.clearTimeout(this.due?.timer);
    this.due = {
      at,
      timer: this.clock.setTimeout(() => {
        this.due = undefined;
        this.request();
      }, delayMs),
    };
  }

  /**
   * Request a run now and wait for it: the next run to start (the follow-up, if one is in
   * progress). Resolves with its result, rejects with its error; undefined once stopped.
   */
  run(): Promise<T | undefined> {
    if (this.stopped) return Promise.resolve(undefined);
    const done = new Promise<T | undefined>((resolve, reject) =>
      this.waiters.push({ resolve, reject }),
    );
    this.request();
    return done;
  }

  /** No more runs or timers; waits for the run in progress. Waiting callers get undefined. */
  async stop(): Promise<void> {
    this.stopped = true;
    this.clock.clearTimeout(this.due?.timer);
    this.clock.clearTimeout(this.retryTimer);
    this.clock.clearTimeout(this.tickTimer);
    this.due = undefined;
    for (const w of this.waiters.splice(0)) w.resolve(undefined);
    await this.running;
  }

  private request(): void {
    if (this.stopped) return;
    this.pending = true;
    this.running ??= this.drive();
  }

  private scheduleTick(): void {
    const period = this.options.periodMs;
    if (period === undefined || this.stopped) return;
    const jitter = Math.min(1, Math.max(0, this.options.periodJitter ?? 0.1));
    this.tickTimer = this.clock.setTimeout(
      () => {
        this.pendingTick = true;
        this.request();
        this.scheduleTick();
      },
      period * (1 - jitter * this.random()),
    );
  }

  private async drive(): Promise<void> {
    try {
      while (this.pending && !this.stopped) {
        this.pending = false;
        const run: LoopRun = { ticked: this.pendingTick, retry: this.pendingRetry };
        this.pendingTick = this.pendingRetry = false;
        // This run supersedes a scheduled retry, and covers a request that is due.
        this.clock.clearTimeout(this.retryTimer);
        this.retryTimer = undefined;
        if (this.due && this.due.at <= this.clock.now()) {
          this.clock.clearTimeout(this.due.timer);
          this.due = undefined;
        }
        const waiters = this.waiters.splice(0);
        this.count++;
        try {
          const value = await this.once(run);
          this.backoff?.reset();
          for (const w of waiters) w.resolve(value);
        } catch (error) {
          for (const w of waiters) w.reject(error);
          this.failed(error);
        }
      }
    } finally {
      this.running = undefined;
    }
  }

  private once(run: LoopRun): Promise<T> {
    const { metrics, name, sync } = this.options;
    return metrics ? metrics.run(name, () => sync(run)) : sync(run);
  }

  private failed(error: unknown): void {
    // A pending request runs right away anyway; otherwise retry after the backoff.
    const retryInMs =
      this.backoff && !this.pending && !this.stopped ? this.backoff.next() : undefined;
    if (retryInMs !== undefined)
      this.retryTimer = this.clock.setTimeout(() => {
        this.retryTimer = undefined;
        this.pendingRetry = true;
        this.request();
      }, retryInMs);
    this.options.onError?.(error, retryInMs);
  }
}
