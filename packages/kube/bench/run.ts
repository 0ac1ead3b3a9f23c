// Benchmark of @flock/kube: how fast a cache applies watch events (bare, with an index, with a
// zod schema), how long a full relist of 10,000 objects takes through the fake API server, and
// work-queue throughput (distinct keys vs. a burst of duplicates).
// Figures, not assertions: `npm run bench -w @flock/kube` prints them with ratios.
import { cpus } from 'node:os';
import { performance } from 'node:perf_hooks';
import { z } from 'zod';
import { Cache } from '../src/informer/cache.js';
import { FakeApiServer } from '../testing/fake-apiserver.js';
import {
  resourceListWatch,
  type ListWatchSource,
  type SourceEvent,
} from '../src/informer/listwatch-source.js';
import { silentLogger } from '../src/core/logger.js';
import { WorkQueue } from '../src/control/queue.js';
import { PODS, type KubeObject } from '../src/core/resource.js';

interface Row {
  name: string;
  value: number;
  unit: string;
}

/** Print rows with each value's ratio to the first row's. */
function table(title: string, rows: Row[]): void {
  console.log(`\n${title}`);
  const base = (rows[0] as Row).value;
  for (const r of rows) {
    const figure =
      r.value >= 100 ? Math.round(r.value).toLocaleString('en-US') : r.value.toFixed(2);
    console.log(
      `  ${r.name.padEnd(44)} ${figure.padStart(12)} ${r.unit.padEnd(9)} ×${(r.value / base).toFixed(2)}`,
    );
  }
}

const PodSchema = z.looseObject({
  apiVersion: z.literal('v1'),
  kind: z.literal('Pod'),
  metadata: z.looseObject({
    name: z.string(),
    namespace: z.string(),
    uid: z.string(),
    resourceVersion: z.string(),
    labels: z.record(z.string(), z.string()).optional(),
    annotations: z.record(z.string(), z.string()).optional(),
  }),
  spec: z.looseObject({ nodeName: z.string().optional() }),
  status: z.looseObject({
    phase: z.string().optional(),
    podIPs: z.array(z.object({ ip: z.string() })).optional(),
    conditions: z.array(z.looseObject({ type: z.string(), status: z.string() })).optional(),
  }),
});
type Pod = z.infer<typeof PodSchema> & KubeObject;

const pod = (i: number, rv: number): Pod => ({
  apiVersion: 'v1',
  kind: 'Pod',
  metadata: {
    name: `pod-${i}`,
    namespace: `ns-${i % 20}`,
    uid: `uid-${i}`,
    resourceVersion: String(rv),
    labels: { app: `app-${i % 50}`, tier: 'web' },
    annotations: { 'flock.fritzlab.net/ip-algo': 'stable' },
  },
  spec: { nodeName: `node-${i % 100}` },
  status: {
    phase: 'Running',
    podIPs: [{ ip: `2001:db8::${i.toString(16)}` }],
    conditions: [{ type: 'Ready', status: rv % 2 ? 'True' : 'False' }],
  },
});

/** Events/s a cache applies, fed synchronously by a stub source (no transport in the way). */
async function cacheEventRate(variant: 'bare' | 'index' | 'schema'): Promise<number> {
  let push: ((e: SourceEvent<unknown>) => void) | undefined;
  const source: ListWatchSource = {
    description: 'bench',
    list: () => Promise.resolve({ items: [], resourceVersion: '1' }),
    watch: (_o, onEvent) => {
      push = onEvent;
      return () => {};
    },
  };
  const cache = new Cache<Pod>({
    source,
    logger: silentLogger,
    ...(variant === 'schema' ? { schema: PodSchema } : {}),
    ...(variant !== 'bare' ? { indexers: { node: (p: Pod) => [p.spec.nodeName ?? ''] } } : {}),
  });
  let seen = 0;
  cache.addHandler({ onAdd: () => seen++, onUpdate: () => seen++ });
  cache.start();
  await cache.synced;
  while (!push) await new Promise((r) => setImmediate(r));
  const events = Array.from({ length: 200_000 }, (_, k) => ({
    type: k < 2000 ? ('ADDED' as const) : ('MODIFIED' as const),
    object: pod(k % 2000, k + 2),
  }));
  const start = performance.now();
  for (const e of events) push(e);
  const seconds = (performance.now() - start) / 1000;
  await cache.stop();
  if (seen !== events.length) throw new Error(`bench: ${seen} of ${events.length} events seen`);
  return events.length / seconds;
}

/** Milliseconds for a cache to list (pages of 500) and sync 10,000 pods from the fake server. */
async function relistMs(): Promise<number> {
  const server = new FakeApiServer();
  for (let i = 0; i < 10_000; i++) server.putObject(PODS, pod(i, 0));
  const times: number[] = [];
  for (let run = 0; run < 5; run++) {
    const cache = new Cache<Pod>({ source: resourceListWatch(server, PODS), logger: silentLogger });
    const start = performance.now();
    cache.start();
    await cache.synced;
    times.push(performance.now() - start);
    await cache.stop();
  }
  return Math.min(...times);
}

/** add + get + done per second through a work queue. */
async function queueRate(duplicates: boolean): Promise<number> {
  const q = new WorkQueue({ name: 'bench' });
  const n = 200_000;
  const start = performance.now();
  for (let i = 0; i < n; i++) {
    q.add(duplicates ? `k${i % 100}` : `k${i}`);
    if (i % 100 === 99) {
      while (q.length > 0) q.done((await q.get()) as string);
    }
  }
  return n / ((performance.now() - start) / 1000);
}

console.log(
  `@flock/kube benchmark — node ${process.version}, ${cpus().length}× ${cpus()[0]?.model ?? '?'}`,
);
table('cache: watch events applied (2,000 pods, 200,000 events)', [
  { name: 'bare (no schema, no index)', value: await cacheEventRate('bare'), unit: 'events/s' },
  { name: 'with a spec.nodeName index', value: await cacheEventRate('index'), unit: 'events/s' },
  { name: 'with index + zod pod schema', value: await cacheEventRate('schema'), unit: 'events/s' },
]);
table('cache: full list of 10,000 pods through the fake API server (best of 5)', [
  { name: 'list in pages of 500 + apply', value: await relistMs(), unit: 'ms' },
]);
table('work queue: add + get + done', [
  { name: 'distinct keys', value: await queueRate(false), unit: 'keys/s' },
  {
    name: 'same 100 keys over and over (deduplicated)',
    value: await queueRate(true),
    unit: 'adds/s',
  },
]);
