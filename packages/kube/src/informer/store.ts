// The cache's contents: objects by key, plus secondary indexes (e.g. pods by spec.nodeName)
// kept up to date on every change.

/** Index values of an object, e.g. pod => [pod.spec.nodeName]. Empty: not in the index. */
export type IndexFunc<T> = (obj: T) => readonly string[];

export class IndexedStore<T> {
  private readonly objects = new Map<string, T>();
  /** index name -> value -> keys */
  private readonly indexes = new Map<string, Map<string, Set<string>>>();
  /**
   * key -> the values it was indexed under, one entry per index (in `names` order), a lone value
   * as itself: one small array per object (a Map and a Set each cost 100,000 pods 60 MiB).
   */
  private readonly indexed = new Map<string, (string | readonly string[])[]>();
  private readonly names: readonly string[];

  constructor(
    private readonly indexers: Readonly<Record<string, IndexFunc<T>>> = {},
    /** Told when an index function throws; the object is then left out of that index. */
    private readonly onIndexError: (index: string, err: unknown) => void = () => {},
  ) {
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
    return [...this.objects.keys()];
  }

  values(): T[] {
    return [...this.objects.values()];
  }

  entries(): IterableIterator<[string, T]> {
    return this.objects.entries();
  }

  /** Insert or replace; returns the previous object. */
  set(key: string, obj: T): T | undefined {
    const old = this.objects.get(key);
    if (old !== undefined) this.unindex(key);
    this.objects.set(key, obj);
    this.index(key, obj);
    return old;
  }

  /** Remove; returns the removed object. */
  delete(key: string): T | undefined {
    const old = this.objects.get(key);
    if (old === undefined) return undefined;
    this.unindex(key);
    this.objects.delete(key);
    return old;
  }

  /** Objects whose index `name` contains `value`. */
  byIndex(name: string, value: string): T[] {
    const index = this.indexes.get(name);
    if (!index) throw new Error(`no index named ${JSON.stringify(name)}`);
    return [...(index.get(value) ?? [])].map((k) => this.objects.get(k) as T);
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
    const under = this.names.map((name) => {
      const index = this.indexes.get(name) as Map<string, Set<string>>;
      const values = this.valuesOf(name, this.indexers[name] as IndexFunc<T>, obj);
      for (const value of values) {
        let keys = index.get(value);
        if (!keys) index.set(value, (keys = new Set()));
        keys.add(key);
      }
      return values.size === 1 ? (values.values().next().value as string) : [...values];
    });
    this.indexed.set(key, under);
  }

  // Removes what index() recorded, not a recomputation: a handler may have mutated the object.
  private unindex(key: string): void {
    const under = this.indexed.get(key) ?? [];
    this.names.forEach((name, i) => {
      const index = this.indexes.get(name) as Map<string, Set<string>>;
      const recorded = under[i] ?? [];
      for (const value of typeof recorded === 'string' ? [recorded] : recorded) {
        const keys = index.get(value);
        keys?.delete(key);
        if (keys?.size === 0) index.delete(value);
      }
    });
    this.indexed.delete(key);
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
