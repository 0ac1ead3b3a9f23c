// Made-up tokens from one address: the relay listens on the nodes' addresses, which pods reach,
// and every token it has not seen costs the API server a TokenReview. After `maxDenials` denied
// tokens within `windowMs`, an address is refused (429) without a review until its window ends.
// Agents are never denied (their token is the allowed account's), so they never meet the limit;
// the addresses kept are bounded (the oldest forgotten first).
export interface DenialLimitOptions {
  /** Denials an address may cause within a window (default 10). */
  maxDenials?: number;
  /** default 10 s */
  windowMs?: number;
  /** Addresses remembered at most (default 10,000). */
  maxSources?: number;
  now?: () => number;
}

export class DenialLimit {
  private readonly bySource = new Map<string, { count: number; since: number }>();
  private readonly maxDenials: number;
  private readonly windowMs: number;
  private readonly maxSources: number;
  private readonly now: () => number;

  constructor(o: DenialLimitOptions = {}) {
    this.maxDenials = o.maxDenials ?? 10;
    this.windowMs = o.windowMs ?? 10_000;
    this.maxSources = o.maxSources ?? 10_000;
    this.now = o.now ?? Date.now;
  }

  /** Whether requests from `source` are refused now (its window holds `maxDenials` denials). */
  limited(source: string): boolean {
    const entry = this.current(source);
    return entry !== undefined && entry.count >= this.maxDenials;
  }

  /** `source` showed a token that was denied. */
  denied(source: string): void {
    let entry = this.current(source);
    if (!entry) {
      entry = { count: 0, since: this.now() };
      if (this.bySource.size >= this.maxSources)
        this.bySource.delete(this.bySource.keys().next().value as string);
      this.bySource.set(source, entry);
    }
    entry.count++;
  }

  /** How many addresses are remembered now (tests, metrics). */
  get size(): number {
    return this.bySource.size;
  }

  private current(source: string) {
    const entry = this.bySource.get(source);
    if (entry && this.now() - entry.since >= this.windowMs) {
      this.bySource.delete(source);
      return undefined;
    }
    return entry;
  }
}
