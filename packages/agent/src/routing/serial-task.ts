// One async job that runs at most once at a time: triggers during a run fold into a single
// re-run afterwards, so a burst of events (ADDs, pod updates) costs one or two passes, never
// overlapping ones. Also a timer that keeps the earliest of several requested run times. With
// `loop`, every run is counted and timed (flock_agent_loop_runs_total, ..._loop_duration_seconds).
import type { LoopMetrics } from '@flock/kube';

export interface LoopName {
  metrics: LoopMetrics;
  name: string;
}

export class SerialTask {
  private running: Promise<void> | undefined;
  private again = false;
  private stopped = false;
  private timer: NodeJS.Timeout | undefined;
  private timerDue = Infinity;

  constructor(
    private readonly job: () => Promise<void>,
    private readonly onError: (error: unknown) => void,
    private readonly loop?: LoopName,
  ) {
    loop?.metrics.declare(loop.name);
  }

  /** Run now, or once more right after the current run; resolves when that run has finished. */
  trigger(): Promise<void> {
    if (this.stopped) return Promise.resolve();
    if (this.running) {
      this.again = true;
      return this.running;
    }
    this.running = this.runs();
    return this.running;
  }

  /** Run in `delayMs` (an earlier scheduled run wins). */
  schedule(delayMs: number): void {
    if (this.stopped) return;
    const due = Date.now() + Math.max(0, delayMs);
    if (this.timer && this.timerDue <= due) return;
    clearTimeout(this.timer);
    this.timerDue = due;
    this.timer = setTimeout(() => {
      this.timer = undefined;
      this.timerDue = Infinity;
      void this.trigger();
    }, delayMs);
  }

  /** No more runs; waits for the one in progress. */
  async stop(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.timer);
    this.timer = undefined;
    await this.running;
  }

  private async runs(): Promise<void> {
    try {
      do {
        this.again = false;
        try {
          if (this.loop) await this.loop.metrics.run(this.loop.name, this.job);
          else await this.job();
        } catch (error) {
          this.onError(error);
        }
      } while (this.again && !this.stopped);
    } finally {
      this.running = undefined;
    }
  }
}
