// Milliseconds per phase of one ADD or DEL, for its log line: where the agent's share of a
// CNI call goes (the latency bench summarizes them).
export class PhaseTimer {
  private readonly start = performance.now();
  private last = this.start;
  private readonly ms: Record<string, number> = {};

  /** The phase `name` ended now (it began where the previous one ended). */
  mark(name: string): void {
    const now = performance.now();
    this.ms[name] = round(now - this.last);
    this.last = now;
  }

  /** A phase that ran alongside others: its own duration, measured by the caller. */
  set(name: string, ms: number): void {
    this.ms[name] = round(ms);
  }

  /** The phases so far and `total` since the timer was created. */
  done(): Record<string, number> {
    return { ...this.ms, total: round(performance.now() - this.start) };
  }
}

const round = (ms: number) => Math.round(ms * 10) / 10;

/** Run `work`, report its duration to `took` whether it succeeds or fails. */
export async function timed<T>(work: () => Promise<T>, took: (ms: number) => void): Promise<T> {
  const t0 = performance.now();
  try {
    return await work();
  } finally {
    took(performance.now() - t0);
  }
}
