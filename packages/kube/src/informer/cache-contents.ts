// What a cache holds and how changes get in: a full list replaces the contents (adds, updates,
// deletes for objects that vanished), a watch event changes one object, and each change goes
// to the handlers. Objects are parsed by the cache's schema (a list's page by page); invalid
// ones are logged, counted and skipped. Also the resourceVersion the contents are at.
import type { z } from 'zod';
import { errorMessage } from '../core/errors.js';
import type { Logger } from '../core/logger.js';
import { rawObjectKey, rawResourceVersion, type KubeObject } from '../core/resource.js';
import type { CacheMetrics } from './cache-metrics.js';
import { HandlerSet } from './handlers.js';
import { IndexedStore, type IndexFunc } from './store.js';
import type { DataEvent } from './watch-session.js';

interface ContentsOptions<T> {
  name: string;
  logger: Logger;
  schema: z.ZodType<T> | undefined;
  indexers: Record<string, IndexFunc<T>>;
  metrics: CacheMetrics | undefined;
}

/** An object of a list: its key, and what the cache keeps of it (undefined: it did not parse). */
export interface Listed<T> {
  key: string;
  object: T | undefined;
}

export class CacheContents<T extends KubeObject> {
  readonly store: IndexedStore<T>;
  readonly handlers: HandlerSet<T>;
  /** The resourceVersion of the last list, event or bookmark applied. */
  resourceVersion: string | undefined;

  constructor(private readonly options: ContentsOptions<T>) {
    const { name, logger } = options;
    this.store = new IndexedStore(
      options.indexers,
      (index, err) =>
        logger.error('index function failed', { cache: name, index, err: errorMessage(err) }),
      (obj) => obj.metadata?.name,
    );
    this.handlers = new HandlerSet(logger, name);
  }

  /**
   * One page of a list as the cache keeps it: each object's key and its parsed form (undefined:
   * invalid, logged). Parsed page by page, so a list never holds every raw object at once.
   */
  parsePage(items: unknown[]): Listed<T>[] {
    const out: Listed<T>[] = [];
    for (const item of items) {
      const key = rawObjectKey(item);
      if (key === undefined) this.invalid(item, 'no metadata.name');
      else out.push({ key, object: this.parse(item) });
    }
    return out;
  }

  /** Apply a full list (its parsed pages): adds, updates, and deletes for objects that vanished. */
  replace(listed: Listed<T>[], resourceVersion: string): void {
    const fresh = new Map<string, T>();
    const present = new Set<string>();
    for (const { key, object } of listed) {
      present.add(key);
      if (object) fresh.set(key, object);
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
    this.options.metrics?.setObjects(this.store.size);
  }

  apply(event: DataEvent): void {
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
    this.options.metrics?.setObjects(this.store.size);
  }

  /** Re-deliver every object as an update. */
  resync(): void {
    for (const obj of this.store.values()) this.handlers.updated(obj, obj);
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
    this.options.metrics?.invalidObject();
    this.options.logger.error('invalid object skipped', {
      cache: this.options.name,
      key: rawObjectKey(item),
      resourceVersion: rawResourceVersion(item),
      why,
    });
  }
}
