// Time and randomness as injectable dependencies, so tests drive timers and jitter exactly.

/** What a clock's setTimeout returns: a Node.js Timeout, or a fake clock's number. */
export type TimerHandle = object | number;

export interface Clock {
  /** Milliseconds since the epoch. */
  now(): number;
  setTimeout(fn: () => void, ms: number): TimerHandle;
  /** Like the global one, a no-op for undefined. */
  clearTimeout(handle: TimerHandle | undefined): void;
}

/** A number in [0, 1), like Math.random. */
export type Random = () => number;

/** The process clock. Looks up the global timer functions on every call so fake timers apply. */
export const systemClock: Clock = {
  now: () => Date.now(),
  setTimeout: (fn, ms) => globalThis.setTimeout(fn, ms),
  clearTimeout: (handle) =>
    globalThis.clearTimeout(handle as ReturnType<typeof setTimeout> | undefined),
};

/**
 * Wait `ms` on `clock`. Resolves true when the time has passed, false as soon as `signal` aborts
 * (never rejects, so loops can simply check their own stop flag afterwards).
 */
export function sleep(
  ms: number,
  clock: Clock = systemClock,
  signal?: AbortSignal,
): Promise<boolean> {
  if (signal?.aborted) return Promise.resolve(false);
  return new Promise((resolve) => {
    const onAbort = () => {
      clock.clearTimeout(timer);
      resolve(false);
    };
    const timer = clock.setTimeout(
      () => {
        signal?.removeEventListener('abort', onAbort);
        resolve(true);
      },
      Math.max(0, ms),
    );
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}
