// Deadlines in memory (quarantine ends, entry ages) are kept on a clock that a step of the wall
// clock does not move: NTP correcting a node that booted hours ahead must neither hold addresses
// back until that hour nor end every quarantine at once. It reads as epoch milliseconds (the wall
// clock when the process started, plus the monotonic time since), so it is still comparable with
// times written to disk, which are capped when read back.

/** Epoch-like milliseconds that only move forward, at the monotonic clock's pace. */
export const steadyNow = (): number => performance.timeOrigin + performance.now();
