// Made-up tokens from one source: the relay listens on the nodes' addresses, which pods reach,
// and every token it has not seen costs the API server a TokenReview. After `maxDenials` denied
// tokens within `windowMs`, a source may not have a token reviewed until its window ends (429);
// tokens already reviewed are still answered, so a connected agent is not held back. A source is
// an IPv4 address or an IPv6 /64: one host may hold a whole /64 and could otherwise show each
// guess from a fresh address (and flush the bounded map with them). The sources kept are bounded
// (the oldest forgotten first).
import { ipFamily, ipToBigInt } from '@flock/api';

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

/** The source a remote address counts against: an IPv4 address (mapped ones unwrapped) or a /64. */
export function denialSource(address: string): string {
  if (ipFamily(address) !== 6) return address;
  const bits = ipToBigInt(address);
  if (bits >> 32n === 0xffffn) return [24n, 16n, 8n, 0n].map((s) => (bits >> s) & 255n).join('.');
  const groups = [112n, 96n, 80n, 64n].map((s) => ((bits >> s) & 0xffffn).toString(16));
  return `${groups.join(':')}::/64`;
}
