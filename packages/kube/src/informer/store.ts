// The cache's contents: objects by key, plus secondary indexes (e.g. pods by spec.nodeName)
// kept up to date on every change.
import { ObjectsByKey } from './objects-by-key.js';

/** Index values of an object, e.g. pod => [pod.spec.nodeName]. Empty: not in the index. */
export type IndexFunc<T> = (obj: T) => readonly string[];

export class IndexedStore<T> {
  private readonly objects: ObjectsByKey<T>;
  /** index name -> value -> objects */
  private readonly indexes = new Map<string, Map<string, Set<T>>>();
  /**
   * key -> the values it was indexed under, one list per index (in `names` order), for objects
   * under more than one value of some index. The rest are found from the object when they leave
   * (a record of each costs 150,000 pods 15 MiB; an index of one node's pods leaves most pods
   * under none).
   */
  private readonly irregular = new Map<string, (readonly string[])[]>();
  private readonly names: readonly string[];

  constructor(
    private readonly indexers: Readonly<Record<string, IndexFunc<T>>> = {},
    /** Told when an index function throws; the object is then left out of that index. */
    private readonly onIndexError: (index: string, err: unknown) => void = () => {},
    /** An object's own name (the key's part after `/`), kept as its key: see ObjectsByKey. */
    nameOf?: (obj: T) => string | undefined,
  ) {
    this.objects = new ObjectsByKey(nameOf);
    this.names = Object.keys(indexers);
    for (const name of this.names) this.indexes.set(name, new Map());
  }

  get size(): number {
    return this.objects.size;
  }

  get(key: string): T | undefined {
    return this.objects.get(key);
  }

  has(key: string): boolean {
    return this.objects.has(key);
  }

  keys(): string[] {
    return this.objects.keys();
  }

  values(): T[] {
    return this.objects.values();
  }

  entries(): IterableIterator<[string, T]> {
    return this.objects.entries();
  }

  /** Insert or replace; returns the previous object. */
  set(key: string, obj: T): T | undefined {
    const old = this.objects.get(key);
    if (old !== undefined) this.unindex(key, old);
    this.objects.set(key, obj);
    this.index(key, obj);
    return old;
  }

  /** Remove; returns the removed object. */
  delete(key: string): T | undefined {
    const old = this.objects.get(key);
    if (old === undefined) return undefined;
    this.unindex(key, old);
    this.objects.delete(key);
    return old;
  }

  /** Objects whose index `name` contains `value`. */
  byIndex(name: string, value: string): T[] {
    const index = this.indexes.get(name);
    if (!index) throw new Error(`no index named ${JSON.stringify(name)}`);
    return [...(index.get(value) ?? [])];
  }

  /** Would `obj` be indexed under `value` in index `name`? (Computed: `obj` need not be stored.) */
  matches(name: string, value: string, obj: T): boolean {
    const fn = this.indexers[name];
    if (!fn) throw new Error(`no index named ${JSON.stringify(name)}`);
    return this.valuesOf(name, fn, obj).has(value);
  }

  /** The values present in index `name`. */
  indexValues(name: string): string[] {
    const index = this.indexes.get(name);
    if (!index) throw new Error(`no index named ${JSON.stringify(name)}`);
    return [...index.keys()];
  }

  private index(key: string, obj: T): void {
    if (this.names.length === 0) return;
    let single = true;
    const under = this.names.map((name) => {
      const index = this.indexes.get(name) as Map<string, Set<T>>;
      const values = this.valuesOf(name, this.indexers[name] as IndexFunc<T>, obj);
      for (const value of values) {
        let objects = index.get(value);
        if (!objects) index.set(value, (objects = new Set()));
        objects.add(obj);
      }
      if (values.size > 1) single = false;
      return [...values];
    });
    if (!single) this.irregular.set(key, under);
  }

  // Removes what index() did, whatever the object says now: a handler may have mutated it.
  private unindex(key: string, obj: T): void {
    const recorded = this.irregular.get(key);
    this.irregular.delete(key);
    this.names.forEach((name, i) => {
      const index = this.indexes.get(name) as Map<string, Set<T>>;
      const remove = (value: string) => {
        const objects = index.get(value);
        objects?.delete(obj);
        if (objects?.size === 0) index.delete(value);
      };
      if (recorded) {
        for (const value of recorded[i] ?? []) remove(value);
        return;
      }
      // Under exactly one value: the one the object names, else (mutated) the one holding it.
      const named = this.quietValues(this.indexers[name] as IndexFunc<T>, obj);
      const value =
        named.find((v) => index.get(v)?.has(obj)) ??
        [...index].find(([, objects]) => objects.has(obj))?.[0];
      if (value !== undefined) remove(value);
    });
  }

  /** The index function's values, a failure as none (the key is then looked for). */
  private quietValues(fn: IndexFunc<T>, obj: T): readonly string[] {
    try {
      return fn(obj);
    } catch {
      return [];
    }
  }

  private valuesOf(name: string, fn: IndexFunc<T>, obj: T): Set<string> {
    try {
      return new Set(fn(obj));
    } catch (err) {
      this.onIndexError(name, err);
      return new Set();
    }
  }
}
