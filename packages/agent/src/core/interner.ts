// One shared instance for equal values: the replicas of a workload carry the same labels, named
// ports and controller, and 150,000 cached pods each holding their own copy is most of what the
// pod cache costs. Sharing is an optimisation, never needed for correctness, so the table is
// bounded: past `maxEntries` keys it starts over, and a key longer than `maxKeyLength` (whose
// copy here would cost as much as the value it saves) is not shared at all.
export class Interner<T> {
  private readonly table = new Map<string, T>();

  constructor(
    private readonly maxEntries: number,
    private readonly maxKeyLength: number,
  ) {}

  /** The value shared under `key`; made (and shared) by `make` the first time. */
  get(key: string, make: () => T): T {
    const hit = this.table.get(key);
    if (hit !== undefined) return hit;
    const value = make();
    if (key.length > this.maxKeyLength) return value;
    if (this.table.size >= this.maxEntries) this.table.clear();
    this.table.set(key, value);
    return value;
  }

  get size(): number {
    return this.table.size;
  }
}
