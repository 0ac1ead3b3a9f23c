// A bound on concurrent API writes: a reconcile of 5,000 nodes keeps this many requests in
// flight instead of one (slow) or 5,000 (a thundering herd against the API server).
export class Limiter {
  private active = 0;
  private readonly waiting: Array<() => void> = [];

  constructor(readonly limit: number) {
    if (!Number.isInteger(limit) || limit < 1) throw new Error(`limit must be ≥ 1, got ${limit}`);
  }

  get inFlight(): number {
    return this.active;
  }

  async run<T>(task: () => Promise<T>): Promise<T> {
    if (this.active >= this.limit) await new Promise<void>((r) => this.waiting.push(r));
    else this.active++;
    try {
      return await task();
    } finally {
      const next = this.waiting.shift();
      if (next)
        next(); // the slot passes straight on
      else this.active--;
    }
  }

  /**
   * Run `task` for every item (at most `limit` at once across all callers); resolves when all
   * have settled, with the errors of those that failed. Items not started before `signal`
   * aborts are skipped.
   */
  async each<I>(items: readonly I[], task: (item: I) => Promise<void>, signal?: AbortSignal) {
    const errors: unknown[] = [];
    await Promise.all(
      items.map((item) =>
        this.run(async () => {
          if (signal?.aborted) return;
          await task(item);
        }).catch((err: unknown) => {
          errors.push(err);
        }),
      ),
    );
    return errors;
  }
}
