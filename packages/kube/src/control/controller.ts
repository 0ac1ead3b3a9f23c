// The reconcile runner: N workers take keys from a WorkQueue and call reconcile(key). Success
// forgets the key's backoff; `requeueAfter` brings it back later; an error retries it with
// backoff; a TerminalError is logged and not retried. Stopping aborts the signal handed to
// reconcile (a leader that lost its lease must stop writing at once) and waits for the workers.
import type { Counter } from 'prom-client';
import type { Cache } from '../informer/cache.js';
import type { Clock, Random } from '../core/clock.js';
import { errorMessage, TerminalError } from '../core/errors.js';
import type { Logger } from '../core/logger.js';
import { counter, type MetricsOptions } from '../core/metrics.js';
import { WorkQueue, type WorkQueueOptions } from './queue.js';
import { objectKey, type KubeObject } from '../core/resource.js';

export interface ReconcileResult {
  /** Reconcile this key again after this many ms (e.g. to re-check a quarantine). */
  requeueAfter?: number;
  /** Reconcile this key again after its backoff, without counting as an error. */
  requeue?: boolean;
}

export interface ReconcileContext {
  /** Aborted when the controller stops (e.g. leadership lost): check it before every write. */
  signal: AbortSignal;
  /** How many times this key has failed in a row before this call. */
  failures: number;
}

type Reconciler = (
  key: string,
  context: ReconcileContext,
) => Promise<ReconcileResult | void> | ReconcileResult | void;

export interface ControllerOptions {
  /** Used in logs and as the work queue's metrics label. */
  name: string;
  reconcile: Reconciler;
  logger: Logger;
  /** Parallel workers (default 1). A key is never reconciled by two workers at once. */
  workers?: number;
  /** Work queue settings (backoff, overall rate limit). */
  queue?: Omit<WorkQueueOptions, 'name' | 'metrics' | 'clock' | 'random'>;
  metrics?: MetricsOptions;
  clock?: Clock;
  random?: Random;
}

/** Maps a changed object to the keys to reconcile (default: the object's own key). */
type KeyMapper<T> = (obj: T) => string | readonly string[] | undefined;

export class Controller {
  readonly queue: WorkQueue;
  private readonly abort = new AbortController();
  private readonly log: Logger;
  private readonly results: Counter | undefined;
  private readonly unsubscribes: Array<() => void> = [];
  private workers: Promise<void>[] = [];
  private state: 'new' | 'running' | 'stopped' = 'new';

  constructor(private readonly options: ControllerOptions) {
    this.log = options.logger;
    this.queue = new WorkQueue({
      ...options.queue,
      name: options.name,
      ...(options.metrics ? { metrics: options.metrics } : {}),
      ...(options.clock ? { clock: options.clock } : {}),
      ...(options.random ? { random: options.random } : {}),
    });
    this.results = options.metrics
      ? counter(options.metrics, 'reconcile_total', 'Reconciles by result.', [
          'controller',
          'result',
        ])
      : undefined;
  }

  get name(): string {
    return this.options.name;
  }

  /** Aborted once stop() is called. */
  get signal(): AbortSignal {
    return this.abort.signal;
  }

  enqueue(key: string): void {
    this.queue.add(key);
  }

  enqueueAfter(key: string, ms: number): void {
    this.queue.addAfter(key, ms);
  }

  /**
   * Enqueue keys for every add, update and delete of `cache` (objects already cached included).
   * Returns the unsubscribe function; stop() unsubscribes too.
   */
  watch<T extends KubeObject>(cache: Cache<T>, map: KeyMapper<T> = objectKey): () => void {
    const enqueue = (obj: T) => {
      const keys = map(obj);
      if (keys === undefined) return;
      for (const key of typeof keys === 'string' ? [keys] : keys) this.queue.add(key);
    };
    const off = cache.addHandler({
      onAdd: enqueue,
      onUpdate: (oldObj, newObj) => {
        enqueue(newObj);
        // A mapper may send the old and new state to different keys (e.g. a node changed pool).
        if (map !== objectKey) enqueue(oldObj);
      },
      onDelete: enqueue,
    });
    this.unsubscribes.push(off);
    return off;
  }

  start(): void {
    if (this.state !== 'new') throw new Error(`controller ${this.name} was already started`);
    this.state = 'running';
    const n = Math.max(1, this.options.workers ?? 1);
    this.workers = Array.from({ length: n }, () => this.work());
    this.log.info('controller started', { controller: this.name, workers: n });
  }

  /** Stop: abort running reconciles' signal, drop queued keys, wait for the workers. */
  async stop(): Promise<void> {
    if (this.state === 'stopped') return;
    const wasRunning = this.state === 'running';
    this.state = 'stopped';
    for (const off of this.unsubscribes.splice(0)) off();
    this.abort.abort();
    await this.queue.shutDown();
    await Promise.all(this.workers);
    if (wasRunning) this.log.info('controller stopped', { controller: this.name });
  }

  private async work(): Promise<void> {
    for (;;) {
      const key = await this.queue.get();
      if (key === undefined) return;
      try {
        await this.reconcileOne(key);
      } finally {
        this.queue.done(key);
      }
    }
  }

  private async reconcileOne(key: string): Promise<void> {
    const signal = this.abort.signal;
    const failures = this.queue.numRequeues(key);
    try {
      const result = await this.options.reconcile(key, { signal, failures });
      if (signal.aborted) return;
      if (result?.requeueAfter !== undefined && result.requeueAfter > 0) {
        this.queue.forget(key);
        this.queue.addAfter(key, result.requeueAfter);
        this.count('requeue');
      } else if (result?.requeue) {
        this.queue.addRateLimited(key);
        this.count('requeue');
      } else {
        this.queue.forget(key);
        this.count('success');
      }
    } catch (err) {
      const meta = { controller: this.name, key, err: errorMessage(err) };
      if (err instanceof TerminalError) {
        this.log.error('reconcile failed and will not be retried', meta);
        this.queue.forget(key);
        this.count('terminal');
      } else if (signal.aborted) {
        this.log.info('reconcile interrupted by stop', meta);
      } else {
        this.log.error('reconcile failed: retrying with backoff', {
          ...meta,
          failures: failures + 1,
        });
        this.queue.addRateLimited(key);
        this.count('error');
      }
    }
  }

  private count(result: string): void {
    this.results?.inc({ controller: this.name, result });
  }
}
