// Delays for retrying: an exponential backoff with jitter (one sequence, or one per key) and a
// token bucket that bounds the overall rate.
import { systemClock, type Clock, type Random } from './clock.js';

export interface BackoffOptions {
  /** First delay in ms. */
  baseMs: number;
  /** Largest delay in ms. */
  maxMs: number;
  /** Growth per attempt (default 2). */
  factor?: number;
  /**
   * Fraction of the delay that is random (0..1, default 0): the delay is drawn from
   * [d·(1−jitter), d], so simultaneous clients spread out without ever exceeding maxMs.
   */
  jitter?: number;
}

function delayFor(attempt: number, o: BackoffOptions, random: Random): number {
  const factor = o.factor ?? 2;
  const raw = Math.min(o.maxMs, o.baseMs * factor ** Math.min(attempt, 1024));
  const jitter = Math.min(1, Math.max(0, o.jitter ?? 0));
  return raw * (1 - jitter * random());
}

/** One growing sequence of delays, e.g. the reconnects of one watch. */
export class Backoff {
  private attempt = 0;
  constructor(
    private readonly options: BackoffOptions,
    private readonly random: Random = Math.random,
  ) {}

  /** The next delay; each call grows the following one until maxMs. */
  next(): number {
    return delayFor(this.attempt++, this.options, this.random);
  }

  /** Start again from baseMs (after a success). */
  reset(): void {
    this.attempt = 0;
  }

  get attempts(): number {
    return this.attempt;
  }
}

/** Independent backoff sequences per key (the work queue's per-item rate limiter). */
export class KeyedBackoff {
  private readonly failures = new Map<string, number>();
  constructor(
    private readonly options: BackoffOptions,
    private readonly random: Random = Math.random,
  ) {}

  /** Record a failure of `key` and return how long to wait before retrying it. */
  next(key: string): number {
    const n = this.failures.get(key) ?? 0;
    this.failures.set(key, n + 1);
    return delayFor(n, this.options, this.random);
  }

  /** Forget the failures of `key` (it succeeded). */
  forget(key: string): void {
    this.failures.delete(key);
  }

  /** Failures recorded for `key` since it was last forgotten. */
  failuresOf(key: string): number {
    return this.failures.get(key) ?? 0;
  }
}

export interface TokenBucketOptions {
  /** Tokens added per second. */
  qps: number;
  /** Bucket size: how many events may pass at once. */
  burst: number;
}

/** A token bucket that hands out reservations: `reserve()` says how long to wait for a token. */
export class TokenBucket {
  private tokens: number;
  private last: number;
  constructor(
    private readonly options: TokenBucketOptions,
    private readonly clock: Clock = systemClock,
  ) {
    if (!(options.qps > 0) || !(options.burst >= 1)) {
      throw new Error(`token bucket needs qps > 0 and burst >= 1, got ${JSON.stringify(options)}`);
    }
    this.tokens = options.burst;
    this.last = clock.now();
  }

  /** Take one token (possibly in the future) and return the wait in ms until it is available. */
  reserve(): number {
    const now = this.clock.now();
    const elapsed = Math.max(0, now - this.last) / 1000;
    this.last = now;
    this.tokens = Math.min(this.options.burst, this.tokens + elapsed * this.options.qps);
    this.tokens -= 1;
    return this.tokens >= 0 ? 0 : (-this.tokens / this.options.qps) * 1000;
  }
}
