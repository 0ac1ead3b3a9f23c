// The results section of docs/conformance.md: a summary per suite and one row per spec (result,
// duration), with the date, the versions and the SCTP evidence of the run. Written between two
// markers so that the prose around it stays as written.
import { readFile, writeFile } from 'node:fs/promises';
import type { SpecResult } from './junit.js';
import { tally } from './junit.js';

export const BEGIN = '<!-- BEGIN conformance results (npm run test:conformance writes this) -->';
export const END = '<!-- END conformance results -->';

/** The markers of a results section. */
export interface Section {
  begin: string;
  end: string;
}

export const SECTIONS = {
  main: { begin: BEGIN, end: END },
  /** A suite run alone (suites.ts `section`) keeps the main section's results as they are. */
  loadbalancer: {
    begin:
      '<!-- BEGIN loadbalancer results (npm run test:conformance -- --suite loadbalancer writes this) -->',
    end: '<!-- END loadbalancer results -->',
  },
  'loadbalancer-ipv4': {
    begin:
      '<!-- BEGIN loadbalancer-ipv4 results (npm run test:conformance -- --suite loadbalancer-ipv4 writes this) -->',
    end: '<!-- END loadbalancer-ipv4 results -->',
  },
  /** The certification run: every [Conformance] spec (suites `conformance`, `conformance-serial`). */
  certification: {
    begin:
      '<!-- BEGIN certification results (npm run test:conformance -- --suite conformance --suite conformance-serial writes this) -->',
    end: '<!-- END certification results -->',
  },
  /** The non-disruptive sig-network specs (suite `sig-network`). */
  'sig-network': {
    begin:
      '<!-- BEGIN sig-network results (npm run test:conformance -- --suite sig-network writes this) -->',
    end: '<!-- END sig-network results -->',
  },
} satisfies Record<string, Section>;

export interface SuiteReport {
  name: string;
  about: string;
  seconds: number;
  procs: number;
  specs: SpecResult[];
  /** Specs not run on purpose, with why (e.g. no SCTP in the kernel). */
  skipped: { pattern: string; reason: string }[];
}

export interface RunReport {
  date: Date;
  versions: Record<string, string>;
  nodes: number;
  /** How the kernel's SCTP support was found (loadSctp), for suites with SCTP specs. */
  sctpEvidence?: string;
  suites: SuiteReport[];
}

/** Text for one Markdown table cell. */
export const cell = (s: string) => s.replace(/\|/g, '\\|').replace(/\n/g, ' ');
export const secs = (s: number) =>
  s >= 60 ? `${Math.floor(s / 60)} min ${Math.round(s % 60)} s` : `${s.toFixed(1)} s`;

/**
 * Specs that were selected to run (not those filtered out by focus or skip, which ginkgo reports
 * as skipped with the bare message "skipped"). A spec that skipped itself at run time ("skipped -
 * Requires at least 2 nodes") counts as run and not passed: no skip goes unseen.
 */
export function ran(specs: readonly SpecResult[]): SpecResult[] {
  return specs.filter(
    (s) =>
      s.status !== 'pending' && !(s.status === 'skipped' && (s.message ?? 'skipped') === 'skipped'),
  );
}

export function renderResults(r: RunReport, section: Section = SECTIONS.main): string {
  const out: string[] = [section.begin, ''];
  out.push(
    `Run of ${r.date.toISOString().replace(/\.\d+Z$/, 'Z')} on a lab of ${r.nodes} real nodes.`,
    '',
    '| component | version |',
    '| --- | --- |',
    ...Object.entries(r.versions).map(([k, v]) => `| ${cell(k)} | ${cell(v)} |`),
    '',
    '| suite | specs run | passed | failed | not run (why) | wall time | ginkgo processes |',
    '| --- | ---: | ---: | ---: | --- | ---: | ---: |',
  );
  for (const s of r.suites) {
    const t = tally(ran(s.specs));
    const failed = ran(s.specs).length - (t['passed'] ?? 0);
    const notRun = s.skipped.length
      ? s.skipped.map((k) => `\`${k.pattern}\`: ${k.reason}`).join('; ')
      : '—';
    out.push(
      `| ${s.name} | ${ran(s.specs).length} | ${t['passed'] ?? 0} | ${failed} | ${cell(notRun)} | ${secs(s.seconds)} | ${s.procs} |`,
    );
  }
  if (r.sctpEvidence !== undefined)
    out.push(
      '',
      'SCTP on this kernel (commands run by the runner, and their output):',
      '',
      '```',
      r.sctpEvidence,
      '```',
    );
  for (const s of r.suites) {
    out.push(
      '',
      `### ${s.name}: ${s.about}`,
      '',
      '| spec | result | duration |',
      '| --- | --- | ---: |',
    );
    for (const spec of ran(s.specs).sort((a, b) => a.name.localeCompare(b.name)))
      out.push(
        `| ${cell(spec.name)} | ${spec.status === 'skipped' ? cell(spec.message ?? 'skipped') : spec.status} | ${spec.seconds.toFixed(1)} s |`,
      );
  }
  out.push('', section.end);
  return out.join('\n');
}

/** Replace the section between `begin` and `end` in the file (or append it). */
export async function writeSection(
  file: string,
  begin: string,
  end: string,
  section: string,
): Promise<void> {
  const doc = await readFile(file, 'utf8');
  const a = doc.indexOf(begin);
  const b = doc.indexOf(end);
  const next =
    a >= 0 && b > a
      ? doc.slice(0, a) + section + doc.slice(b + end.length)
      : `${doc.trimEnd()}\n\n${section}\n`;
  await writeFile(file, next);
}

/** Replace a results section of the file (or append one). */
export async function writeResults(
  file: string,
  r: RunReport,
  section: Section = SECTIONS.main,
): Promise<void> {
  await writeSection(file, section.begin, section.end, renderResults(r, section));
}
