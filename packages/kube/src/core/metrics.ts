// prom-client metrics that several instances share (one work queue per controller, one cache per
// resource): each metric is registered once per registry and told apart by a label.
import { Counter, Gauge, Histogram, type Registry } from 'prom-client';

export interface MetricsOptions {
  /** Where the metrics are registered (the one the health server's /metrics serves). */
  registry: Registry;
  /** Prepended to every metric name, e.g. "flock_operator_". */
  prefix?: string;
}

type Kind = 'counter' | 'gauge' | 'histogram';
const classes = { counter: Counter, gauge: Gauge, histogram: Histogram } as const;

function getOrCreate<K extends Kind>(
  kind: K,
  opts: MetricsOptions,
  name: string,
  help: string,
  labelNames: readonly string[],
  buckets?: number[],
): InstanceType<(typeof classes)[K]> {
  const fullName = `${opts.prefix ?? ''}${name}`;
  const existing = opts.registry.getSingleMetric(fullName);
  if (existing) {
    if (!(existing instanceof classes[kind])) {
      throw new Error(`metric ${fullName} is already registered as a different type`);
    }
    return existing as InstanceType<(typeof classes)[K]>;
  }
  const Metric = classes[kind] as unknown as new (c: object) => InstanceType<(typeof classes)[K]>;
  return new Metric({
    name: fullName,
    help,
    labelNames: [...labelNames],
    registers: [opts.registry],
    ...(buckets ? { buckets } : {}),
  });
}

export const counter = (o: MetricsOptions, name: string, help: string, labels: readonly string[]) =>
  getOrCreate('counter', o, name, help, labels);
export const gauge = (o: MetricsOptions, name: string, help: string, labels: readonly string[]) =>
  getOrCreate('gauge', o, name, help, labels);
export const histogram = (
  o: MetricsOptions,
  name: string,
  help: string,
  labels: readonly string[],
  buckets: number[],
) => getOrCreate('histogram', o, name, help, labels, buckets);

/** Seconds buckets from 1 ms to ~16 min, for latencies of reconciles and queue waits. */
export const LATENCY_BUCKETS = [
  0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 1000,
];
