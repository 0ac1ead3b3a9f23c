// A work queue of keys, like client-go's rate-limited workqueue: a key added while it waits is
// queued once; a key added while it is being processed is queued again when done() is called,
// so no key is ever processed twice at the same time and no add is ever lost. Failed keys come
// back after a per-key exponential backoff (optionally also bounded by an overall token bucket).
import type { Counter, Gauge, Histogram } from 'prom-client';
import {
  KeyedBackoff,
  TokenBucket,
  type BackoffOptions,
  type TokenBucketOptions,
} from '../core/backoff.js';
import { systemClock, type Clock, type Random, type TimerHandle } from '../core/clock.js';
import {
  counter,
  gauge,
  histogram,
  LATENCY_BUCKETS,
  type MetricsOptions,
} from '../core/metrics.js';

export interface WorkQueueOptions {
  /** Label of this queue's metrics, e.g. the controller's name. */
  name: string;
  /** Per-key retry backoff (default 5 ms doubling to 5 min, no jitter). */
  backoff?: BackoffOptions;
  /** Optional overall bound on retries per second (client-go's default is 10 qps, burst 100). */
  rateLimit?: TokenBucketOptions;
  metrics?: MetricsOptions;
  clock?: Clock;
  random?: Random;
}

interface QueueMetrics {
  depth: Gauge;
  adds: Counter;
  retries: Counter;
  inFlight: Gauge;
  queueDuration: Histogram;
  workDuration: Histogram;
}

export class WorkQueue {
  readonly name: string;
  private fifo: string[] = [];
  private head = 0;
  /** Keys that need processing (queued, or re-added while processing). */
  private readonly dirty = new Set<string>();
  private readonly processing = new Set<string>();
  private readonly addedAt = new Map<string, number>();
  private readonly startedAt = new Map<string, number>();
  private readonly delayed = new Map<string, { due: number; timer: TimerHandle }>();
  private readonly getters: Array<(key: string | undefined) => void> = [];
  private readonly idleWaiters: Array<() => void> = [];
  private readonly backoff: KeyedBackoff;
  private readonly bucket: TokenBucket | undefined;
  private readonly clock: Clock;
  private readonly metrics: QueueMetrics | undefined;
  private shuttingDown = false;
  private draining = false;

  constructor(options: WorkQueueOptions) {
    this.name = options.name;
    this.clock = options.clock ?? systemClock;
    this.backoff = new KeyedBackoff(
      options.backoff ?? { baseMs: 5, maxMs: 5 * 60_000 },
      options.random ?? Math.random,
    );
    this.bucket = options.rateLimit ? new TokenBucket(options.rateLimit, this.clock) : undefined;
    this.metrics = options.metrics ? createMetrics(options.metrics) : undefined;
    this.metrics?.depth.set({ name: this.name }, 0);
    this.metrics?.inFlight.set({ name: this.name }, 0);
  }

  /** Keys waiting to be handed out. */
  get length(): number {
    return this.fifo.length - this.head;
  }

  /** Keys being processed now (handed out by get(), not yet done()). */
  get inFlight(): number {
    return this.processing.size;
  }

  get isShuttingDown(): boolean {
    return this.shuttingDown;
  }

  /** Queue `key` now (ignored after shutDown). */
  add(key: string): void {
    if (this.shuttingDown || this.dirty.has(key)) return;
    this.dirty.add(key);
    this.addedAt.set(key, this.clock.now());
    this.metrics?.adds.inc({ name: this.name });
    if (!this.processing.has(key)) this.push(key);
  }

  /** Queue `key` after `ms`; of several pending delayed adds of one key, the earliest wins. */
  addAfter(key: string, ms: number): void {
    if (this.shuttingDown) return;
    if (ms <= 0) {
      this.add(key);
      return;
    }
    const due = this.clock.now() + ms;
    const pending = this.delayed.get(key);
    if (pending && pending.due <= due) return;
    if (pending) this.clock.clearTimeout(pending.timer);
    const timer = this.clock.setTimeout(() => {
      this.delayed.delete(key);
      this.add(key);
    }, ms);
    this.delayed.set(key, { due, timer });
  }

  /** Queue `key` again after its backoff (and a token of the overall rate limit). */
  addRateLimited(key: string): void {
    if (this.shuttingDown) return;
    this.metrics?.retries.inc({ name: this.name });
    const wait = Math.max(this.backoff.next(key), this.bucket?.reserve() ?? 0);
    this.addAfter(key, wait);
  }

  /** Reset `key`'s backoff (it was processed successfully). */
  forget(key: string): void {
    this.backoff.forget(key);
  }

  /** Failures of `key` since it was last forgotten. */
  numRequeues(key: string): number {
    return this.backoff.failuresOf(key);
  }

  /**
   * The next key to process, waiting for one if needed; undefined once the queue is shut down
   * (after a draining shutdown: once nothing is left to do). Call done(key) when finished.
   */
  get(): Promise<string | undefined> {
    if (this.length > 0) return Promise.resolve(this.take());
    if (this.shuttingDown && !this.workPending()) return Promise.resolve(undefined);
    return new Promise((resolve) => this.getters.push(resolve));
  }

  /** Processing of `key` finished; if it was added meanwhile, it is queued again. */
  done(key: string): void {
    if (!this.processing.delete(key)) return;
    const started = this.startedAt.get(key);
    this.startedAt.delete(key);
    if (started !== undefined) {
      this.metrics?.workDuration.observe({ name: this.name }, (this.clock.now() - started) / 1000);
    }
    this.metrics?.inFlight.set({ name: this.name }, this.processing.size);
    if (this.dirty.has(key)) this.push(key);
    this.settle();
  }

  /**
   * Stop accepting keys and cancel delayed adds. Without `drain`, queued keys are dropped and
   * get() returns undefined at once; with `drain`, queued (and re-added in-flight) keys are still
   * handed out. Resolves when no key is in flight any more.
   */
  shutDown(options: { drain?: boolean } = {}): Promise<void> {
    this.shuttingDown = true;
    this.draining = options.drain ?? false;
    for (const { timer } of this.delayed.values()) this.clock.clearTimeout(timer);
    this.delayed.clear();
    if (!this.draining) {
      this.fifo = [];
      this.head = 0;
      this.dirty.clear();
      this.addedAt.clear();
      this.metrics?.depth.set({ name: this.name }, 0);
    }
    const idle = new Promise<void>((resolve) => this.idleWaiters.push(resolve));
    this.settle();
    return idle;
  }

  private push(key: string): void {
    const getter = this.getters.shift();
    if (getter) {
      this.fifo.push(key);
      getter(this.take());
      return;
    }
    this.fifo.push(key);
    this.metrics?.depth.set({ name: this.name }, this.length);
  }

  private take(): string {
    const key = this.fifo[this.head] as string;
    this.head++;
    if (this.head > 1024 && this.head * 2 > this.fifo.length) {
      this.fifo = this.fifo.slice(this.head);
      this.head = 0;
    }
    this.dirty.delete(key);
    this.processing.add(key);
    const now = this.clock.now();
    const added = this.addedAt.get(key);
    this.addedAt.delete(key);
    if (added !== undefined) {
      this.metrics?.queueDuration.observe({ name: this.name }, (now - added) / 1000);
    }
    this.startedAt.set(key, now);
    this.metrics?.depth.set({ name: this.name }, this.length);
    this.metrics?.inFlight.set({ name: this.name }, this.processing.size);
    return key;
  }

  /** Is there anything a draining worker may still be handed? */
  private workPending(): boolean {
    if (this.length > 0) return true;
    if (!this.draining) return false;
    for (const key of this.processing) if (this.dirty.has(key)) return true;
    return false;
  }

  /** After shutdown: release idle getters and resolve shutDown() once nothing is in flight. */
  private settle(): void {
    if (!this.shuttingDown) return;
    if (!this.workPending()) {
      for (const getter of this.getters.splice(0)) getter(undefined);
    }
    if (this.processing.size === 0 && !this.workPending()) {
      for (const resolve of this.idleWaiters.splice(0)) resolve();
    }
  }
}

function createMetrics(o: MetricsOptions): QueueMetrics {
  const l = ['name'];
  return {
    depth: gauge(o, 'workqueue_depth', 'Keys waiting in the queue.', l),
    adds: counter(o, 'workqueue_adds_total', 'Keys added (not counting duplicates).', l),
    retries: counter(o, 'workqueue_retries_total', 'Keys re-queued after a failure.', l),
    inFlight: gauge(o, 'workqueue_in_flight', 'Keys being processed now.', l),
    queueDuration: histogram(
      o,
      'workqueue_queue_duration_seconds',
      'Time a key waited in the queue before processing.',
      l,
      LATENCY_BUCKETS,
    ),
    workDuration: histogram(
      o,
      'workqueue_work_duration_seconds',
      'Time spent processing a key (processing latency).',
      l,
      LATENCY_BUCKETS,
    ),
  };
}
