// The JUnit report ginkgo writes (--junit-report): one <testcase> per spec, with its status
// (passed, failed, skipped, pending, panicked, interrupted, timedout), its duration and, for a
// failure, ginkgo's message. Parsed without an XML library: ginkgo's report is regular (one
// element per line for the opening tags; attribute values escaped).
export interface SpecResult {
  /** The spec's full text, without ginkgo's "[It] " node-type prefix. */
  name: string;
  /** `spec` for an [It]; `suite` for [SynchronizedBeforeSuite], [ReportAfterSuite] and the like. */
  kind: 'spec' | 'suite';
  status: string;
  seconds: number;
  /** The failure (or skip) message, if any. */
  message?: string;
}

const ENTITIES: Record<string, string> = {
  amp: '&',
  lt: '<',
  gt: '>',
  quot: '"',
  apos: "'",
};

export function unescapeXml(s: string): string {
  return s.replace(/&(#x[0-9a-fA-F]+|#[0-9]+|[a-z]+);/g, (whole, e: string) => {
    if (e.startsWith('#x')) return String.fromCodePoint(parseInt(e.slice(2), 16));
    if (e.startsWith('#')) return String.fromCodePoint(parseInt(e.slice(1), 10));
    return ENTITIES[e] ?? whole;
  });
}

function attributes(tag: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const m of tag.matchAll(/([\w:-]+)="([^"]*)"/g)) out[m[1]!] = unescapeXml(m[2]!);
  return out;
}

/** Every case of a ginkgo JUnit report, in report order: the specs and the suite-level nodes. */
export function parseJUnit(xml: string): SpecResult[] {
  const out: SpecResult[] = [];
  const cases = xml.matchAll(/<testcase\b([^>]*?)(\/>|>([\s\S]*?)<\/testcase>)/g);
  for (const m of cases) {
    const a = attributes(m[1]!);
    const raw = a['name'] ?? '';
    const isSpec = raw.startsWith('[It] ');
    const body = m[3] ?? '';
    const detail = /<(failure|error|skipped)\b([^>]*?)\/?>/.exec(body);
    const message = detail ? attributes(detail[2]!)['message'] : undefined;
    out.push({
      name: isSpec ? raw.slice(5) : raw,
      kind: isSpec ? 'spec' : 'suite',
      status: a['status'] ?? (detail ? detail[1]! : 'passed'),
      seconds: Number(a['time'] ?? 0),
      ...(message ? { message } : {}),
    });
  }
  return out;
}

/** Counts by status. */
export function tally(results: readonly SpecResult[]): Record<string, number> {
  const t: Record<string, number> = {};
  for (const r of results) t[r.status] = (t[r.status] ?? 0) + 1;
  return t;
}
