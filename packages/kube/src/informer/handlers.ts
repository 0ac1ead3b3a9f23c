// The subscribers of a cache. Each is called synchronously, in event order; one that throws is
// logged and does not keep the others (or the cache) from running.
import { errorMessage } from '../core/errors.js';
import type { Logger } from '../core/logger.js';

export interface CacheHandler<T> {
  onAdd?(obj: T): void;
  /** Also called by resync (old === new) and for every surviving object after a relist. */
  onUpdate?(oldObj: T, newObj: T): void;
  /** The object's last known state (the deletion's final state when it parsed). */
  onDelete?(obj: T): void;
}

export class HandlerSet<T> {
  private readonly handlers = new Set<CacheHandler<T>>();

  constructor(
    private readonly log: Logger,
    private readonly cache: string,
  ) {}

  /** Subscribe; `existing` objects are delivered to this handler as adds first. */
  add(handler: CacheHandler<T>, existing: Iterable<T>): () => void {
    this.handlers.add(handler);
    for (const obj of existing) this.call(handler, 'onAdd', obj);
    return () => this.handlers.delete(handler);
  }

  added(obj: T): void {
    for (const h of [...this.handlers]) this.call(h, 'onAdd', obj);
  }

  updated(oldObj: T, newObj: T): void {
    for (const h of [...this.handlers]) this.call(h, 'onUpdate', oldObj, newObj);
  }

  deleted(obj: T): void {
    for (const h of [...this.handlers]) this.call(h, 'onDelete', obj);
  }

  private call(h: CacheHandler<T>, event: keyof CacheHandler<T>, a: T, b?: T): void {
    try {
      if (event === 'onUpdate') h.onUpdate?.(a, b as T);
      else h[event]?.(a);
    } catch (err) {
      this.log.error('cache handler failed', { cache: this.cache, event, err: errorMessage(err) });
    }
  }
}
