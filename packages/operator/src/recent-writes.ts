// Read-your-writes over a cache. The watch that feeds a cache lags behind the operator's own
// writes; planning on that lag would carve a prefix a second time for a node whose NodeConfig
// was just created, or drop a quarantine entry just written to a Pool's status. Every object
// the operator writes (or lists fresh) is kept here until the cache has caught up with it.
import type { KubeObject } from '@flock/kube';

/** Is version `a` older than `b`? (etcd revisions; unknown forms never count as older) */
export function olderThan(a: string | undefined, b: string | undefined): boolean {
  if (a === undefined) return b !== undefined;
  if (b === undefined || !/^\d+$/.test(a) || !/^\d+$/.test(b)) return false;
  return BigInt(a) < BigInt(b);
}

export class RecentWrites<T extends KubeObject> {
  private readonly written = new Map<string, T>();

  get size(): number {
    return this.written.size;
  }

  /** Remember an object as the server returned it (an older one never replaces a newer one). */
  record(obj: T): void {
    const name = obj.metadata.name as string;
    const known = this.written.get(name);
    if (known && olderThan(obj.metadata.resourceVersion, known.metadata.resourceVersion)) return;
    this.written.set(name, obj);
  }

  /** The cache delivered `obj` (any event): once it is as new as what we wrote, forget ours. */
  observe(obj: T): void {
    const name = obj.metadata.name as string;
    const known = this.written.get(name);
    if (known && !olderThan(obj.metadata.resourceVersion, known.metadata.resourceVersion)) {
      this.written.delete(name);
    }
  }

  /** The freshest of the cached object and what we wrote. */
  get(name: string, cached: T | undefined): T | undefined {
    const known = this.written.get(name);
    if (!known) return cached;
    if (cached && !olderThan(cached.metadata.resourceVersion, known.metadata.resourceVersion)) {
      this.written.delete(name);
      return cached;
    }
    return known;
  }

  /** The cached list with our fresher writes laid over it (objects only we know are added). */
  overlay(cached: readonly T[]): T[] {
    if (this.written.size === 0) return [...cached];
    const seen = new Set<string>();
    const out = cached.map((obj) => {
      const name = obj.metadata.name as string;
      seen.add(name);
      return this.get(name, obj) as T;
    });
    for (const [name, obj] of this.written) if (!seen.has(name)) out.push(obj);
    return out;
  }

  clear(): void {
    this.written.clear();
  }
}
