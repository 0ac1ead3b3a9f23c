// Percentiles and the markdown table the benchmarks print (the CNI latency bench, the lab's
// benches). Figures, never assertions.

export interface Summary {
  n: number;
  p50: number;
  p99: number;
  max: number;
}

/** Nearest-rank percentiles of a sample (ms). */
export function summarize(ms: readonly number[]): Summary {
  const s = [...ms].sort((a, b) => a - b);
  const at = (q: number) => s[Math.min(s.length - 1, Math.max(0, Math.ceil(q * s.length) - 1))];
  return { n: s.length, p50: at(0.5) ?? NaN, p99: at(0.99) ?? NaN, max: at(1) ?? NaN };
}

const f = (n: number) => (Number.isFinite(n) ? n.toFixed(1) : '—');
const x = (a: number, b: number) => (b > 0 ? `×${(a / b).toFixed(3)}` : '—');

/**
 * One markdown table: a row per candidate with p50/p99/max and its ratios to each reference
 * row (by name), so the doc can take the output as is.
 */
export function table(
  title: string,
  rows: readonly { name: string; ms: readonly number[] }[],
  references: readonly string[],
): string {
  const sums = rows.map((r) => ({ name: r.name, s: summarize(r.ms) }));
  const ref = (name: string) => sums.find((r) => r.name === name)?.s;
  const head = [
    '| candidate | n | p50 ms | p99 ms | max ms |',
    ...references.map((r) => ` p50 / ${r} | p99 / ${r} |`),
  ].join('');
  const rule =
    '| --- | ---: | ---: | ---: | ---: |' + references.map(() => ' ---: | ---: |').join('');
  const lines = sums.map(({ name, s }) =>
    [
      `| ${name} | ${s.n} | ${f(s.p50)} | ${f(s.p99)} | ${f(s.max)} |`,
      ...references.map((r) => {
        const b = ref(r);
        return b ? ` ${x(s.p50, b.p50)} | ${x(s.p99, b.p99)} |` : ' — | — |';
      }),
    ].join(''),
  );
  return [`\n### ${title}\n`, head, rule, ...lines].join('\n');
}
