// A list-then-watch cache of one resource (an informer): a paged list, then a watch from the
// list's resourceVersion; it relists on 410 Gone, reconnects with jittered backoff, restarts a
// watch that went silent, and re-delivers everything periodically. There is exactly one watch
// at a time: a single loop owns it, aborts it before starting the next one, and ignores
// anything a superseded watch still delivers. Every way a watch can end leads back into the
// loop, which only stops when stop() is called.
import type { z } from 'zod';
import { Backoff, type BackoffOptions } from './backoff.js';
import { sleep, systemClock, type Clock, type Random, type TimerHandle } from './clock.js';
import { CacheMetrics } from './cache-metrics.js';
import { errorMessage, isGone } from './errors.js';
import type { ListWatchSource } from './listwatch-source.js';
import type { Logger } from './logger.js';
import type { MetricsOptions } from './metrics.js';
import { rawObjectKey, rawResourceVersion, type KubeObject } from './resource.js';
import { HandlerSet, type CacheHandler } from './handlers.js';
import { IndexedStore, type IndexFunc } from './store.js';
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

  private readonly store: IndexedStore<T>;
  private readonly handlers: HandlerSet<T>;
  private readonly backoff: Backoff;
  private readonly clock: Clock;
  private readonly random: Random;
  private readonly log: Logger;
  private readonly metrics: CacheMetrics | undefined;

  private state: 'new' | 'running' | 'stopped' = 'new';
  private loop: Promise<void> | undefined;
  private resourceVersion: string | undefined;
  /** Aborts whatever the loop is waiting for (a list, a pause); replaced per step. */
  private stepAbort = new AbortController();
  private stopWatch: (() => void) | undefined;
  private resyncTimer: TimerHandle | undefined;

  constructor(private readonly options: CacheOptions<T>) {
    this.name = options.name ?? options.source.description;
    this.log = options.logger;
    this.clock = options.clock ?? systemClock;
    this.random = options.random ?? Math.random;
    this.backoff = new Backoff(
      options.backoff ?? { baseMs: 500, maxMs: 30_000, jitter: 0.5 },
      this.random,
    );
    this.store = new IndexedStore(options.indexers ?? {}, (index, err) =>
      this.log.error('index function failed', { cache: this.name, index, err: errorMessage(err) }),
    );
    this.handlers = new HandlerSet(this.log, this.name);
    this.metrics = options.metrics ? new CacheMetrics(options.metrics, this.name) : undefined;
    this.synced = new Promise<void>((resolve, reject) => {
      this.resolveSynced = resolve;
      this.rejectSynced = reject;
    });
    this.synced.catch(() => {}); // stop() before sync must not be an unhandled rejection
  }

  get hasSynced(): boolean {
    return this.synced_;
  }

  /** The resourceVersion the next watch would start from. */
  get lastResourceVersion(): string | undefined {
    return this.resourceVersion;
  }

  get size(): number {
    return this.store.size;
  }

  /** By key ("namespace/name" or "name"). */
  get(key: string): T | undefined {
    return this.store.get(key);
  }

  getObject(name: string, namespace?: string): T | undefined {
    return this.store.get(namespace ? `${namespace}/${name}` : name);
  }

  list(): T[] {
    return this.store.values();
  }

  keys(): string[] {
    return this.store.keys();
  }

  byIndex(index: string, value: string): T[] {
    return this.store.byIndex(index, value);
  }

  indexValues(index: string): string[] {
    return this.store.indexValues(index);
  }

  /** Is `obj` (stored or not, e.g. an event's old state) under `value` in `index`? */
  inIndex(index: string, value: string, obj: T): boolean {
    return this.store.matches(index, value, obj);
  }

  /**
   * Subscribe. With `replay` (default), objects already in the cache are delivered to this
   * handler as adds first. Handlers run synchronously in event order and should be quick
   * (typically: enqueue a key); a handler that throws is logged and does not affect others.
   */
  addHandler(handler: CacheHandler<T>, options: { replay?: boolean } = {}): () => void {
    return this.handlers.add(handler, (options.replay ?? true) ? this.store.values() : []);
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
      if (needList) {
        if (!(await this.relist())) {
          await this.pause(this.backoff.next());
          continue;
        }
        needList = false;
      }
      const end = await this.watchOnce();
      if (this.stopped) break;
      this.metrics?.watchEnded(end.kind);
      if (end.productive) this.backoff.reset();
      const meta = { cache: this.name, resourceVersion: this.resourceVersion };
      switch (end.kind) {
        case 'expired':
          this.log.info('watch expired (410): relisting', meta);
          needList = true;
          break;
        case 'closed':
          this.log.debug('watch closed by the server: reconnecting', meta);
          break;
        case 'stalled':
          this.log.warn('watch silent for too long: restarting it', {
            ...meta,
            watchdogMs: this.watchdogMs,
          });
          break;
        case 'api-error':
          // The stream's state is unknown after an API error: start over from a list.
          this.log.warn('watch failed: relisting', { ...meta, err: errorMessage(end.err) });
          needList = true;
          break;
        case 'error':
          this.log.warn('watch connection failed: reconnecting', {
            ...meta,
            err: errorMessage(end.err),
          });
          break;
        case 'stopped':
          break;
      }
      // A watch that delivered nothing before ending must not turn into a hot loop; only the
      // first expiry after a healthy period relists at once. A stalled watch already waited the
      // watchdog period: restart it at once (a backoff on top would keep a cache whose
      // connections keep going silent away from the server for up to the backoff cap).
      if (end.kind === 'stalled') continue;
      if (!end.productive || end.kind === 'error' || end.kind === 'api-error') {
        const first = this.backoff.attempts === 0;
        const delay = this.backoff.next();
        if (!(end.kind === 'expired' && first)) await this.pause(delay);
      }
    }
  }

  private get watchdogMs(): number {
    return this.options.watchdogMs ?? 5 * 60_000;
  }

  private async pause(ms: number): Promise<void> {
    if (this.stopped) return;
    this.stepAbort = new AbortController();
    await sleep(ms, this.clock, this.stepAbort.signal);
  }

  /** One complete paged list, applied as a replacement. False when it failed (or we stopped). */
  private async relist(): Promise<boolean> {
    this.stepAbort = new AbortController();
    const signal = this.stepAbort.signal;
    const raw: unknown[] = [];
    let resourceVersion: string | undefined;
    let token: string | undefined;
    try {
      do {
        const page = await this.options.source.list({
          limit: this.options.pageSize ?? 500,
          ...(token ? { continue: token } : {}),
          ...this.selectors(),
          signal,
        });
        if (this.stopped) return false;
        resourceVersion ??= page.resourceVersion;
        for (const item of page.items) raw.push(item); // (a spread overflows on huge pages)
        token = page.continue;
      } while (token);
    } catch (err) {
      if (this.stopped) return false;
      const why = isGone(err) && token ? 'list continue token expired' : 'list failed';
      this.log.warn(`${why}: retrying`, { cache: this.name, err: errorMessage(err) });
      return false;
    }
    this.metrics?.relisted();
    this.replace(raw, resourceVersion);
    return true;
  }

  private selectors() {
    return {
      ...(this.options.fieldSelector ? { fieldSelector: this.options.fieldSelector } : {}),
      ...(this.options.labelSelector ? { labelSelector: this.options.labelSelector } : {}),
    };
  }

  /** Apply a full list: adds, updates, and deletes for objects that vanished. */
  private replace(items: unknown[], resourceVersion: string): void {
    const fresh = new Map<string, T>();
    const present = new Set<string>();
    for (const item of items) {
      const key = rawObjectKey(item);
      if (key === undefined) {
        this.invalid(item, 'no metadata.name');
        continue;
      }
      present.add(key);
      const obj = this.parse(item);
      if (obj) fresh.set(key, obj);
    }
    // An object that is still there but no longer parses keeps its last valid state.
    for (const key of this.store.keys()) {
      if (present.has(key)) continue;
      const old = this.store.delete(key) as T;
      this.handlers.deleted(old);
    }
    for (const [key, obj] of fresh) {
      const old = this.store.set(key, obj);
      if (old) this.handlers.updated(old, obj);
      else this.handlers.added(obj);
    }
    this.resourceVersion = resourceVersion;
    this.metrics?.setObjects(this.store.size);
    if (!this.synced_) {
      this.synced_ = true;
      this.log.info('cache synced', {
        cache: this.name,
        objects: this.store.size,
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
    const options = {
      resourceVersion: this.resourceVersion as string,
      allowWatchBookmarks: true,
      timeoutSeconds: this.options.watchTimeoutSeconds ?? Math.floor(300 * (1 + this.random())),
      ...this.selectors(),
    };
    const session = startWatch(
      this.options.source,
      options,
      this.watchdogMs,
      (event) => {
        try {
          this.applyEvent(event);
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

  private applyEvent(event: DataEvent): void {
    const rv = rawResourceVersion(event.object);
    if (event.type === 'BOOKMARK') {
      if (rv) this.resourceVersion = rv;
      return;
    }
    const key = rawObjectKey(event.object);
    if (key === undefined) {
      if (rv) this.resourceVersion = rv;
      this.invalid(event.object, 'no metadata.name');
      return;
    }
    const obj = this.parse(event.object);
    if (rv) this.resourceVersion = rv;
    if (event.type === 'DELETED') {
      const old = this.store.delete(key);
      if (old) this.handlers.deleted(obj ?? old);
    } else if (obj) {
      const old = this.store.set(key, obj);
      if (old) this.handlers.updated(old, obj);
      else this.handlers.added(obj);
    }
    this.metrics?.setObjects(this.store.size);
  }

  private parse(item: unknown): T | undefined {
    if (!this.options.schema) return item as T;
    const result = this.options.schema.safeParse(item);
    if (result.success) return result.data;
    this.invalid(
      item,
      result.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; '),
    );
    return undefined;
  }

  private invalid(item: unknown, why: string): void {
    this.metrics?.invalidObject();
    this.log.error('invalid object skipped', {
      cache: this.name,
      key: rawObjectKey(item),
      resourceVersion: rawResourceVersion(item),
      why,
    });
  }

  private scheduleResync(): void {
    const every = this.options.resyncMs ?? 0;
    if (every <= 0 || this.stopped) return;
    this.resyncTimer = this.clock.setTimeout(() => {
      if (this.stopped) return;
      for (const obj of this.store.values()) this.handlers.updated(obj, obj);
      this.scheduleResync();
    }, every);
  }
}
