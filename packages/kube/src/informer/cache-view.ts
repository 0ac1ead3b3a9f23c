// One value of a cache's index as a cache of its own, e.g. the pods of one node out of the
// cluster-wide pod cache: lookups, the list and the events of only the objects indexed under
// that value. An object that comes into the subset (a pod bound to the node) is an add for the
// view, one that leaves it a delete — the events a cache with that field selector would see.
// One watch then serves both the whole and the part.
import type { Cache } from './cache.js';
import type { CacheHandler } from './handlers.js';
import type { KubeObject } from '../core/resource.js';

export class CacheView<T extends KubeObject = KubeObject> {
  constructor(
    private readonly cache: Cache<T>,
    private readonly index: string,
    private readonly value: string,
  ) {
    // Fails now, not at the first event, when the cache has no such index.
    cache.byIndex(index, value);
  }

  /** The whole cache's first sync. */
  get synced(): Promise<void> {
    return this.cache.synced;
  }

  get hasSynced(): boolean {
    return this.cache.hasSynced;
  }

  private has(obj: T | undefined): obj is T {
    return obj !== undefined && this.cache.inIndex(this.index, this.value, obj);
  }

  /** By key ("namespace/name" or "name"), when in the view. */
  get(key: string): T | undefined {
    const obj = this.cache.get(key);
    return this.has(obj) ? obj : undefined;
  }

  getObject(name: string, namespace?: string): T | undefined {
    const obj = this.cache.getObject(name, namespace);
    return this.has(obj) ? obj : undefined;
  }

  list(): T[] {
    return this.cache.byIndex(this.index, this.value);
  }

  /** Subscribe to the view's events; with `replay` (default) its objects come as adds first. */
  addHandler(handler: CacheHandler<T>, options: { replay?: boolean } = {}): () => void {
    return this.cache.addHandler(
      {
        onAdd: (obj) => {
          if (this.has(obj)) handler.onAdd?.(obj);
        },
        onUpdate: (old, obj) => {
          const was = this.has(old);
          const is = this.has(obj);
          if (was && is) handler.onUpdate?.(old, obj);
          else if (is) handler.onAdd?.(obj);
          else if (was) handler.onDelete?.(old);
        },
        onDelete: (obj) => {
          if (this.has(obj)) handler.onDelete?.(obj);
        },
      },
      { replay: options.replay ?? true },
    );
  }
}
