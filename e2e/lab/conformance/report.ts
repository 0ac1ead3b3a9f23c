// The results section of docs/conformance.md: a summary per suite and one row per spec (result,
// duration), with the date, the versions and the SCTP evidence of the run. Written between two
// markers so that the prose around it stays as written. A run replaces the rows of its own
// suites only: a section's other suites (run on another day) stay, each row naming its run.
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

export function renderResults(
  r: RunReport,
  section: Section = SECTIONS.main,
  kept?: readonly KeptSuite[],
): string {
  const ours = new Set(r.suites.map((s) => s.name));
  const others = (kept ?? []).filter((k) => !ours.has(k.name));
  const out: string[] = [section.begin, ''];
  out.push(
    `Run of ${r.date.toISOString().replace(/\.\d+Z$/, 'Z')} on a lab of ${r.nodes} real nodes${others.length ? " (the versions are this run's; a row of an earlier run names its date and flock version)" : ''}.`,
    '',
    '| component | version |',
    '| --- | --- |',
    ...Object.entries(r.versions).map(([k, v]) => `| ${cell(k)} | ${cell(v)} |`),
    '',
    '| suite | run | specs run | passed | failed | not run (why) | wall time | ginkgo processes |',
    '| --- | --- | ---: | ---: | ---: | --- | ---: | ---: |',
  );
  const run = `${r.date.toISOString().replace(/\.\d+Z$/, 'Z')}, ${r.nodes} nodes, flock ${r.versions['flock'] ?? '?'}`;
  for (const s of r.suites) {
    const t = tally(ran(s.specs));
    const failed = ran(s.specs).length - (t['passed'] ?? 0);
    const notRun = s.skipped.length
      ? s.skipped.map((k) => `\`${k.pattern}\`: ${k.reason}`).join('; ')
      : '—';
    out.push(
      `| ${s.name} | ${cell(run)} | ${ran(s.specs).length} | ${t['passed'] ?? 0} | ${failed} | ${cell(notRun)} | ${secs(s.seconds)} | ${s.procs} |`,
    );
  }
  out.push(...others.map((k) => k.row));
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
  for (const k of others) out.push('', k.specs);
  out.push('', section.end);
  return out.join('\n');
}

/** A suite of an earlier run, as its section shows it: its summary row and its table of specs. */
export interface KeptSuite {
  name: string;
  row: string;
  specs: string;
}

/**
 * The suites a results section shows (renderResults' own format): each summary row (its first
 * cell is the suite) with the "### suite: ..." block of its specs. A row without a block is left
 * out (it would be a summary nothing backs).
 */
export function keptSuites(section: string): KeptSuite[] {
  const lines = section.split('\n');
  const header = lines.findIndex((l) => /^\|\s*suite\s*\|\s*run\s*\|/.test(l));
  if (header < 0) return [];
  const rows: { name: string; row: string }[] = [];
  for (const l of lines.slice(header + 2)) {
    if (!l.startsWith('|')) break;
    rows.push({ name: (l.split('|')[1] ?? '').trim(), row: l });
  }
  const blocks = new Map<string, string>();
  let current: { name: string; lines: string[] } | undefined;
  const close = () => {
    if (current) blocks.set(current.name, current.lines.join('\n').trimEnd());
  };
  for (const l of lines) {
    const heading = /^### ([^:]+):/.exec(l);
    if (heading) {
      close();
      current = { name: heading[1]!.trim(), lines: [l] };
    } else if (l.startsWith('<!-- END')) break;
    else current?.lines.push(l);
  }
  close();
  return rows.flatMap((r) => {
    const specs = blocks.get(r.name);
    return specs === undefined ? [] : [{ ...r, specs }];
  });
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

/** Replace a results section of the file (or append one), keeping the suites this run did not run. */
export async function writeResults(
  file: string,
  r: RunReport,
  section: Section = SECTIONS.main,
): Promise<void> {
  const doc = await readFile(file, 'utf8');
  const a = doc.indexOf(section.begin);
  const b = doc.indexOf(section.end);
  const kept = a >= 0 && b > a ? keptSuites(doc.slice(a, b + section.end.length)) : [];
  await writeSection(file, section.begin, section.end, renderResults(r, section, kept));
}
