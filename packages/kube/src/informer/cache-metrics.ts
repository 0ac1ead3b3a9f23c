// What a cache reports about itself: how many objects it holds, how often it relisted, why its
// watches ended, and how many objects it had to skip as invalid.
import type { Counter, Gauge } from 'prom-client';
import { counter, gauge, type MetricsOptions } from '../core/metrics.js';

export class CacheMetrics {
  private readonly objects: Gauge;
  private readonly relists: Counter;
  private readonly watchEnds: Counter;
  private readonly invalid: Counter;

  constructor(
    options: MetricsOptions,
    private readonly cache: string,
  ) {
    this.objects = gauge(options, 'cache_objects', 'Objects held by the cache.', ['cache']);
    this.relists = counter(options, 'cache_relists_total', 'Complete lists applied.', ['cache']);
    this.watchEnds = counter(
      options,
      'cache_watch_ends_total',
      'Watches that ended, by reason (closed, expired, stalled, error, api-error, stopped).',
      ['cache', 'reason'],
    );
    this.invalid = counter(
      options,
      'cache_invalid_objects_total',
      'Objects skipped because they failed validation.',
      ['cache'],
    );
    this.objects.set({ cache }, 0);
  }

  setObjects(n: number): void {
    this.objects.set({ cache: this.cache }, n);
  }
  relisted(): void {
    this.relists.inc({ cache: this.cache });
  }
  watchEnded(reason: string): void {
    this.watchEnds.inc({ cache: this.cache, reason });
  }
  invalidObject(): void {
    this.invalid.inc({ cache: this.cache });
  }
}
