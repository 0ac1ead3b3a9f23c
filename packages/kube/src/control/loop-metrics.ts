// What every periodic or triggered loop of a program reports: how often it ran, how each run
// ended, and how long it took. One pair of metrics per registry, told apart by the `loop` label.
import type { Counter, Histogram } from 'prom-client';
import { counter, histogram, LATENCY_BUCKETS, type MetricsOptions } from '../core/metrics.js';

export class LoopMetrics {
  private readonly runs: Counter;
  private readonly duration: Histogram;

  constructor(options: MetricsOptions) {
    this.runs = counter(options, 'loop_runs_total', 'Runs of a loop, by result (ok, error).', [
      'loop',
      'result',
    ]);
    this.duration = histogram(
      options,
      'loop_duration_seconds',
      'Time one run of a loop took.',
      ['loop'],
      LATENCY_BUCKETS,
    );
  }

  /** Make a loop's series exist (at 0) before its first run. */
  declare(loop: string): void {
    for (const result of ['ok', 'error']) this.runs.inc({ loop, result }, 0);
    this.duration.zero({ loop });
  }

  /** Run one pass of `loop`, counted and timed; errors are counted and rethrown. */
  async run<T>(loop: string, pass: () => Promise<T>): Promise<T> {
    const end = this.duration.startTimer({ loop });
    try {
      const value = await pass();
      this.runs.inc({ loop, result: 'ok' });
      return value;
    } catch (error) {
      this.runs.inc({ loop, result: 'error' });
      throw error;
    } finally {
      end();
    }
  }
}
