// kube-proxy's own view, for benchmarks bounded by it: its effective sync periods (/configz) and
// its histograms (/metrics), read on every lab node through its metrics address
// (127.0.0.1:10249 inside the node, e2e/lab/node/config.ts). Best effort: a figure that cannot
// be read is reported as such, never fails the benchmark.
import type { Lab } from '../core/lab.js';

const METRICS = 'http://127.0.0.1:10249';

/** A Prometheus histogram summed over the nodes: cumulative counts by upper bound (seconds). */
export interface Histogram {
  buckets: Map<number, number>;
  count: number;
  sum: number;
}

/** GET a URL from inside lab node `index` (its network namespace). */
export async function fetchInNode(lab: Lab, index: number, url: string): Promise<string> {
  const r = await lab.nodes[index]!.ns.enter('curl', ['-sf', '--max-time', '5', url], {
    timeoutMs: 10_000,
  });
  return r.stdout;
}

/** The sync periods kube-proxy runs with on the first node, as its /configz says. */
export async function kubeProxySyncPeriods(lab: Lab): Promise<string> {
  try {
    const config = (
      JSON.parse(await fetchInNode(lab, 0, `${METRICS}/configz`)) as Record<string, unknown>
    )['kubeproxy.config.k8s.io'] as Record<string, unknown> & {
      nftables?: Record<string, unknown>;
    };
    const pick = (key: string) => JSON.stringify(config[key] ?? config.nftables?.[key] ?? '?');
    return `mode ${pick('mode')}, minSyncPeriod ${pick('minSyncPeriod')}, syncPeriod ${pick('syncPeriod')}`;
  } catch (e) {
    return `unavailable (${e instanceof Error ? e.message : String(e)})`;
  }
}

const LINE = /^(\w+?)_(bucket|sum|count)(?:\{(.*)\})? (\S+)$/;

/** The named histograms of every node's kube-proxy, summed; undefined when one cannot be read. */
export async function kubeProxyHistograms(
  lab: Lab,
  names: readonly string[],
): Promise<Map<string, Histogram> | undefined> {
  const out = new Map<string, Histogram>(
    names.map((n) => [n, { buckets: new Map(), count: 0, sum: 0 }]),
  );
  try {
    for (let i = 0; i < lab.nodes.length; i++) {
      for (const line of (await fetchInNode(lab, i, `${METRICS}/metrics`)).split('\n')) {
        const m = LINE.exec(line);
        const h = m && out.get(m[1]!);
        if (!h) continue;
        const value = Number(m[4]);
        if (m[2] === 'sum') h.sum += value;
        else if (m[2] === 'count') h.count += value;
        else {
          const raw = /le="([^"]+)"/.exec(m[3] ?? '')?.[1];
          const le = raw === '+Inf' ? Infinity : Number(raw);
          h.buckets.set(le, (h.buckets.get(le) ?? 0) + value);
        }
      }
    }
  } catch {
    return undefined;
  }
  return out;
}

/** What happened between two readings. */
export function histogramDelta(before: Histogram, after: Histogram): Histogram {
  return {
    count: after.count - before.count,
    sum: after.sum - before.sum,
    buckets: new Map(
      [...after.buckets].map(([le, n]) => [le, n - (before.buckets.get(le) ?? 0)] as const),
    ),
  };
}

/** "n=…, mean … ms, p50 ≤ … ms, p99 ≤ … ms" (quantiles as the bucket bound that holds them). */
export function describeHistogram(h: Histogram): string {
  if (h.count <= 0) return 'n=0';
  const bound = (q: number) => {
    const le = [...h.buckets].sort(([a], [b]) => a - b).find(([, n]) => n >= q * h.count)?.[0];
    return le === undefined || !Number.isFinite(le) ? '+Inf' : `${(le * 1000).toFixed(0)} ms`;
  };
  return `n=${h.count}, mean ${((h.sum / h.count) * 1000).toFixed(0)} ms, p50 ≤ ${bound(0.5)}, p99 ≤ ${bound(0.99)}`;
}
