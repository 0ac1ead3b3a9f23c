// A list-then-watch cache of one resource (an informer): a paged list (or, with `watchList`, a
// streaming list: a watch that sends the current state first) and a watch from the list's
// resourceVersion; it relists on 410 Gone, reconnects with jittered backoff, restarts a
// watch that went silent, and re-delivers everything periodically. There is exactly one watch
// at a time: a single loop owns it, aborts it before starting the next one, and ignores
// anything a superseded watch still delivers. Every way a watch can end leads back into the
// loop, which only stops when stop() is called; relist-policy.ts decides what comes next.
import type { z } from 'zod';
import { Backoff, type BackoffOptions } from '../core/backoff.js';
import { sleep, systemClock, type Clock, type Random, type TimerHandle } from '../core/clock.js';
import { KubeApiError, errorMessage } from '../core/errors.js';
import type { Logger } from '../core/logger.js';
import type { MetricsOptions } from '../core/metrics.js';
import { rawObjectKey, type KubeObject } from '../core/resource.js';
import { CacheContents, type Listed } from './cache-contents.js';
import { CacheMetrics } from './cache-metrics.js';
import type { CacheHandler } from './handlers.js';
import { INITIAL_EVENTS_END, type ListWatchSource, type WatchOptions } from './listwatch-source.js';
import * as policy from './relist-policy.js';
import type { IndexFunc } from './store.js';
import { startWatch, type DataEvent, type WatchEnd } from './watch-session.js';

export interface CacheOptions<T> {
  source: ListWatchSource;
  logger: Logger;
  /** Parses every object; objects that fail are logged and skipped. Without it, T is unchecked. */
  schema?: z.ZodType<T>;
  /** For logs and metrics (default: the source's description). */
  name?: string;
  fieldSelector?: string;
  labelSelector?: string;
  /** List page size (default 500). */
  pageSize?: number;
  /** Restart a watch that delivered nothing (not even a bookmark) for this long (default 5 min). */
  watchdogMs?: number;
  /** Server-side watch timeout (default: random in [300, 600) s, like client-go). */
  watchTimeoutSeconds?: number;
  /**
   * Sync with a streaming list (WatchList: a watch that sends the current state first) instead
   * of a paged LIST, where the server has it. A server that refuses it (an older one, or the
   * feature gate off: 4xx) or does not end the initial events gets paged lists. Default false:
   * side by side with lists it cost the API server more CPU per sync (docs/benchmarks.md).
   */
  watchList?: boolean;
  /** Re-deliver every object as an update this often; 0 = never (default). */
  resyncMs?: number;
  /** Reconnect/relist backoff (default 500 ms .. 30 s, jitter 0.5). */
  backoff?: BackoffOptions;
  indexers?: Record<string, IndexFunc<T>>;
  metrics?: MetricsOptions;
  clock?: Clock;
  random?: Random;
}

export class CacheStoppedError extends Error {
  constructor(name: string) {
    super(`cache ${name} was stopped before it synced`);
    this.name = 'CacheStoppedError';
  }
}

export class Cache<T extends KubeObject = KubeObject> {
  readonly name: string;
  /** Resolves when the first complete list has been applied; rejects if stopped before. */
  readonly synced: Promise<void>;
  private synced_ = false;
  private resolveSynced!: () => void;
  private rejectSynced!: (err: Error) => void;

  private readonly contents: CacheContents<T>;
  private readonly backoff: Backoff;
  private readonly clock: Clock;
  private readonly random: Random;
  private readonly log: Logger;
  private readonly metrics: CacheMetrics | undefined;

  private state: 'new' | 'running' | 'stopped' = 'new';
  private loop: Promise<void> | undefined;
  /** Aborts whatever the loop is waiting for (a list, a pause); replaced per step. */
  private stepAbort = new AbortController();
  private stopWatch: (() => void) | undefined;
  /** Sync by streaming lists (until the server shows it cannot). */
  private streaming: boolean;
  private resyncTimer: TimerHandle | undefined;

  constructor(private readonly options: CacheOptions<T>) {
    this.name = options.name ?? options.source.description;
    this.log = options.logger;
    this.clock = options.clock ?? systemClock;
    this.random = options.random ?? Math.random;
    this.backoff = new Backoff(options.backoff ?? policy.CACHE_BACKOFF, this.random);
    this.metrics = options.metrics ? new CacheMetrics(options.metrics, this.name) : undefined;
    this.contents = new CacheContents({
      name: this.name,
      logger: this.log,
      schema: options.schema,
      indexers: options.indexers ?? {},
      metrics: this.metrics,
    });
    this.synced = new Promise<void>((resolve, reject) => {
      this.resolveSynced = resolve;
      this.rejectSynced = reject;
    });
    this.synced.catch(() => {}); // stop() before sync must not be an unhandled rejection
    this.streaming = options.watchList ?? false;
  }

  get hasSynced(): boolean {
    return this.synced_;
  }

  /** The resourceVersion the next watch would start from. */
  get lastResourceVersion(): string | undefined {
    return this.contents.resourceVersion;
  }

  get size(): number {
    return this.contents.store.size;
  }

  /** By key ("namespace/name" or "name"). */
  get(key: string): T | undefined {
    return this.contents.store.get(key);
  }

  getObject(name: string, namespace?: string): T | undefined {
    return this.contents.store.get(namespace ? `${namespace}/${name}` : name);
  }

  list(): T[] {
    return this.contents.store.values();
  }

  keys(): string[] {
    return this.contents.store.keys();
  }

  byIndex(index: string, value: string): T[] {
    return this.contents.store.byIndex(index, value);
  }

  indexValues(index: string): string[] {
    return this.contents.store.indexValues(index);
  }

  /** Is `obj` (stored or not, e.g. an event's old state) under `value` in `index`? */
  inIndex(index: string, value: string, obj: T): boolean {
    return this.contents.store.matches(index, value, obj);
  }

  /**
   * Subscribe. With `replay` (default), objects already in the cache are delivered to this
   * handler as adds first. Handlers run synchronously in event order and should be quick
   * (typically: enqueue a key); a handler that throws is logged and does not affect others.
   */
  addHandler(handler: CacheHandler<T>, options: { replay?: boolean } = {}): () => void {
    return this.contents.handlers.add(
      handler,
      (options.replay ?? true) ? this.contents.store.values() : [],
    );
  }

  start(): void {
    if (this.state !== 'new') throw new Error(`cache ${this.name} was already started`);
    this.state = 'running';
    this.loop = this.run().catch((err: unknown) => {
      // run() handles its errors itself; reaching this is a bug worth a loud log.
      this.log.error('cache loop crashed', { cache: this.name, err: errorMessage(err) });
    });
  }

  /** Stop watching; resolves when nothing of this cache runs any more. */
  async stop(): Promise<void> {
    if (this.state === 'stopped') return this.loop;
    this.state = 'stopped';
    this.stepAbort.abort();
    this.stopWatch?.();
    if (this.resyncTimer !== undefined) this.clock.clearTimeout(this.resyncTimer);
    if (!this.synced_) this.rejectSynced(new CacheStoppedError(this.name));
    await this.loop;
  }

  /** Wait until synced, at most `timeoutMs`. */
  async waitForSync(timeoutMs: number): Promise<void> {
    let timer: TimerHandle | undefined;
    const timeout = new Promise<never>((_, reject) => {
      timer = this.clock.setTimeout(
        () => reject(new Error(`cache ${this.name} did not sync within ${timeoutMs} ms`)),
        timeoutMs,
      );
    });
    try {
      await Promise.race([this.synced, timeout]);
    } finally {
      this.clock.clearTimeout(timer);
    }
  }

  private get stopped(): boolean {
    return this.state === 'stopped';
  }

  private async run(): Promise<void> {
    let needList = true;
    while (!this.stopped) {
      let end: WatchEnd;
      if (needList && this.streaming) {
        const streamed = await this.streamOnce();
        if (this.stopped) break;
        if (!streamed.listed) {
          this.metrics?.watchEnded(streamed.end.kind);
          if (streamed.fallBack) this.fallBackToLists(streamed.end);
          else await this.pause(this.backoff.next());
          continue;
        }
        end = streamed.end;
      } else {
        if (needList && !(await this.relist())) {
          await this.pause(this.backoff.next());
          continue;
        }
        end = await this.watchOnce();
      }
      needList = false;
      if (this.stopped) break;
      this.metrics?.watchEnded(end.kind);
      const next = policy.afterWatch(end, {
        backoff: this.backoff,
        log: this.log,
        meta: { cache: this.name, resourceVersion: this.contents.resourceVersion },
        watchdogMs: this.watchdogMs,
      });
      if (next.relist) needList = true;
      if (next.pauseMs !== undefined) await this.pause(next.pauseMs);
    }
  }

  private get watchdogMs(): number {
    return this.options.watchdogMs ?? policy.CACHE_WATCHDOG_MS;
  }

  private async pause(ms: number): Promise<void> {
    if (this.stopped) return;
    this.stepAbort = new AbortController();
    await sleep(ms, this.clock, this.stepAbort.signal);
  }

  /** One complete paged list, applied as a replacement. False when it failed (or we stopped). */
  private async relist(): Promise<boolean> {
    this.stepAbort = new AbortController();
    const list = await policy.listAll(
      this.options.source,
      { limit: this.options.pageSize ?? 500, ...this.selectors(), signal: this.stepAbort.signal },
      () => this.stopped,
      this.log,
      this.name,
      (items) => this.contents.parsePage(items),
    );
    if (!list) return false;
    this.metrics?.relisted();
    this.replace(list.items, list.resourceVersion);
    return true;
  }

  private selectors() {
    return {
      ...(this.options.fieldSelector ? { fieldSelector: this.options.fieldSelector } : {}),
      ...(this.options.labelSelector ? { labelSelector: this.options.labelSelector } : {}),
    };
  }

  /** Apply a full list; the first one syncs the cache. */
  private replace(listed: Listed<T>[], resourceVersion: string): void {
    this.contents.replace(listed, resourceVersion);
    if (!this.synced_) {
      this.synced_ = true;
      this.log.info('cache synced', {
        cache: this.name,
        objects: this.contents.store.size,
        resourceVersion,
      });
      this.resolveSynced();
      this.scheduleResync();
    }
  }

  /** Watch from the last resourceVersion until the watch ends, in whatever way. */
  private async watchOnce(): Promise<WatchEnd> {
    // stop() may have run between the list and here (e.g. from a `synced` continuation).
    if (this.stopped) return { kind: 'stopped', productive: false };
    return this.runWatch({ resourceVersion: this.contents.resourceVersion as string }, (event) =>
      this.contents.apply(event),
    );
  }

  /**
   * A streaming list and the watch it becomes: the initial events are gathered as a list is,
   * applied as one replacement at the bookmark that ends them, and the changes after it as a
   * watch's. `listed`: the initial events ended (the contents are replaced).
   */
  private async streamOnce(): Promise<{ end: WatchEnd; listed: boolean; fallBack: boolean }> {
    const initial = new Map<string, Listed<T>>();
    let listed = false;
    const end = await this.runWatch(
      { resourceVersion: '', sendInitialEvents: true, resourceVersionMatch: 'NotOlderThan' },
      (event) => {
        if (listed) return this.contents.apply(event);
        if (event.type === 'BOOKMARK') {
          const rv = event.object.metadata?.resourceVersion;
          if (event.object.metadata?.annotations?.[INITIAL_EVENTS_END] !== 'true' || !rv) return;
          listed = true;
          this.metrics?.relisted();
          this.replace([...initial.values()], rv);
          initial.clear();
        } else if (event.type === 'DELETED') {
          const key = rawObjectKey(event.object);
          if (key !== undefined) initial.delete(key);
        } else
          for (const item of this.contents.parsePage([event.object])) initial.set(item.key, item);
      },
    );
    // Refused (an older server, the feature gate off), or ended with objects sent and never the
    // bookmark that ends them (a server that ignores sendInitialEvents): lists from now on.
    const refused = end.kind === 'api-error' && isClientError(end.err);
    const unended = !listed && end.productive && end.kind === 'closed';
    return { end, listed, fallBack: refused || unended };
  }

  private fallBackToLists(end: WatchEnd): void {
    this.streaming = false;
    this.log.info('the server does not serve streaming lists: syncing with paged lists', {
      cache: this.name,
      ended: end.kind,
      ...('err' in end ? { err: errorMessage(end.err) } : {}),
    });
  }

  private async runWatch(
    from: Pick<WatchOptions, 'resourceVersion' | 'sendInitialEvents' | 'resourceVersionMatch'>,
    apply: (event: DataEvent) => void,
  ): Promise<WatchEnd> {
    const options = {
      ...from,
      allowWatchBookmarks: true,
      timeoutSeconds: policy.watchTimeoutSeconds(this.options.watchTimeoutSeconds, this.random),
      ...this.selectors(),
    };
    const session = startWatch(
      this.options.source,
      options,
      this.watchdogMs,
      (event) => {
        try {
          apply(event);
        } catch (err) {
          const meta = { cache: this.name, err: errorMessage(err) };
          this.log.error('applying a watch event failed', meta);
        }
      },
      this.clock,
    );
    this.stopWatch = session.stop;
    try {
      return await session.ended;
    } finally {
      this.stopWatch = undefined;
    }
  }

  private scheduleResync(): void {
    const every = this.options.resyncMs ?? 0;
    if (every <= 0 || this.stopped) return;
    this.resyncTimer = this.clock.setTimeout(() => {
      if (this.stopped) return;
      this.contents.resync();
      this.scheduleResync();
    }, every);
  }
}

/** A 4xx other than 410 (expired) and 429 (throttled): the server will not serve the request. */
function isClientError(err: unknown): boolean {
  return (
    err instanceof KubeApiError &&
    err.code >= 400 &&
    err.code < 500 &&
    ![410, 429].includes(err.code)
  );
}
