// The agent image's malloc settings (images/agent/Dockerfile's ENV; e2e/chart/images.test.ts
// checks they are the same). glibc's malloc raises its mmap threshold to the largest block
// freed (a list page of pods is ≈ 1.8 MB) and then serves such blocks from arenas it rarely
// returns: after a 150,000-pod sync that kept ≈ 12–15 MiB of RSS for nothing. A fixed threshold
// (glibc's own default) and two arenas give it back (docs/benchmarks.md "Agent memory").
export const AGENT_MALLOC_ENV: Readonly<Record<string, string>> = Object.freeze({
  MALLOC_ARENA_MAX: '2',
  MALLOC_MMAP_THRESHOLD_: '131072',
  MALLOC_TRIM_THRESHOLD_: '131072',
});
