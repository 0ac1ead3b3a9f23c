// What the benchmark and its watcher processes say to each other over the IPC channel.
import type { WatchCounts } from './counting-transport.js';

/** Benchmark → watcher. */
export type Command = { type: 'start' } | { type: 'report' } | { type: 'stop' };

/** What a watcher has received so far (counts cumulative, lags since the last report). */
export interface Report {
  type: 'report';
  counts: Record<string, WatchCounts>;
  /** [write number, ms from the write to this watcher seeing it]. */
  lags: [number, number][];
  /** CPU this process has used, user + system. */
  cpuMs: number;
}

/** Watcher → benchmark. */
export type Reply =
  { type: 'ready' } | { type: 'synced'; ms: number } | { type: 'failed'; error: string } | Report;
