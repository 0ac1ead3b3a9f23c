// The Grafana dashboard the chart ships (charts/flock/files/dashboard.json), as the tests read
// it: its panels, their Prometheus queries and the metrics those queries read.
import { z } from 'zod';

const Target = z.looseObject({ refId: z.string(), expr: z.string().min(1) });
const Panel = z.looseObject({
  id: z.int(),
  type: z.string(),
  title: z.string(),
  targets: z.array(Target).optional(),
});
export const Dashboard = z.looseObject({
  uid: z.string(),
  title: z.string(),
  panels: z.array(Panel),
});
export type Dashboard = z.infer<typeof Dashboard>;

/** Every query of every panel (rows have none), named "panel title/refId". */
export function dashboardQueries(d: Dashboard): { panel: string; expr: string }[] {
  return d.panels
    .filter((p) => p.type !== 'row')
    .flatMap((p) => {
      if (!p.targets?.length) throw new Error(`panel ${p.title} has no query`);
      return p.targets.map((t) => ({ panel: `${p.title}/${t.refId}`, expr: t.expr }));
    });
}

// PromQL words that are neither metrics nor functions (binary operators, modifiers).
const KEYWORDS = new Set([
  'and',
  'or',
  'unless',
  'bool',
  'offset',
  'group_left',
  'group_right',
  'inf',
  'nan',
]);

/**
 * The metric names a PromQL expression selects: every identifier left once strings, label
 * matchers, ranges and label lists (by, without, on, ignoring, group_left/right) are taken out,
 * that is not a function or aggregation (followed by "("), a keyword, or part of a number.
 */
export function queryMetrics(expr: string): string[] {
  const bare = expr
    .replace(/"(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*'/g, ' ')
    .replace(/\{[^}]*\}/g, ' ')
    .replace(/\[[^\]]*\]/g, ' ')
    .replace(/\b(?:by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)/g, ' ');
  const names = new Set<string>();
  for (const m of bare.matchAll(/(?<![\w.:])[a-zA-Z_:][\w:]*/g)) {
    const rest = bare.slice(m.index + m[0].length);
    if (/^\s*\(/.test(rest) || KEYWORDS.has(m[0].toLowerCase())) continue;
    names.add(m[0]);
  }
  return [...names];
}

/** A metric as a registry lists it (prom-client's getMetricsAsJSON). */
export interface RegisteredMetric {
  name: string;
  type: string;
}

/**
 * Queries that read a metric no registry holds, as "panel/refId: metric" (empty: every query
 * reads only registered metrics). A histogram's or summary's series (_bucket, _sum, _count)
 * count as its own; a query that reads no metric at all is reported too.
 */
export function unregisteredMetrics(
  d: Dashboard,
  registered: readonly RegisteredMetric[],
): string[] {
  const types = new Map(registered.map((m) => [m.name, m.type]));
  const known = (name: string) => {
    if (types.has(name)) return true;
    const series = /^(.*)_(bucket|sum|count)$/.exec(name);
    const type = series && types.get(series[1]!);
    return type === 'histogram' || (type === 'summary' && series![2] !== 'bucket');
  };
  return dashboardQueries(d).flatMap((q) => {
    const names = queryMetrics(q.expr);
    if (!names.length) return [`${q.panel}: no metric in ${q.expr}`];
    return names.filter((n) => !known(n)).map((n) => `${q.panel}: ${n}`);
  });
}
