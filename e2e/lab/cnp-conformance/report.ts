// The ClusterNetworkPolicy section of docs/conformance.md: the run's date, versions and command,
// a summary, one row per conformance test (with its cases), every failed case with the probe and
// the assertion that failed, and the suite's own ConformanceReport as it wrote it. Written
// between two markers so that the prose around it stays as written.
import { cell, secs, writeSection } from '../conformance/report.js';
import { byTest, type CaseResult, type SuiteRun } from './events.js';

export const BEGIN =
  '<!-- BEGIN ClusterNetworkPolicy conformance results (npm run test:conformance:cnp writes this) -->';
export const END = '<!-- END ClusterNetworkPolicy conformance results -->';

export interface CnpReport {
  date: Date;
  nodes: number;
  versions: Record<string, string>;
  /** The binary and its flags. */
  command: string[];
  seconds: number;
  run: SuiteRun;
  /** The suite's ConformanceReport (YAML), if written. */
  suiteReport?: string;
  /** Why a failure is not flock's, when it is known (e.g. an SCTP probe on a kernel without SCTP). */
  explain?: (c: CaseResult) => string | undefined;
  /** Sentences on how this run differs from the upstream binary (e.g. the no-SCTP variant). */
  notes: string[];
}

export function failureText(c: CaseResult): string {
  const f = c.failure;
  if (!f) return '';
  const parts = [
    f.command ? `\`${f.command}\`` : undefined,
    f.expected,
    f.error && !f.expected ? f.error : undefined,
    f.at ? `at ${f.at}` : undefined,
  ].filter((p): p is string => Boolean(p));
  return parts.join(': ') || 'failed (see the log)';
}

export function renderCnp(r: CnpReport): string {
  const tests = byTest(r.run);
  const count = (s: string) => tests.filter((t) => t.test.status === s).length;
  const cases = r.run.cases.filter((c) => c.case !== '');
  const out: string[] = [BEGIN, ''];
  out.push(
    `Run of ${r.date.toISOString().replace(/\.\d+Z$/, 'Z')} on a lab of ${r.nodes} real nodes, ${secs(r.seconds)}.`,
    '',
    '| component | version |',
    '| --- | --- |',
    ...Object.entries(r.versions).map(([k, v]) => `| ${cell(k)} | ${cell(v)} |`),
    '',
    `Command: \`${r.command.join(' ')}\``,
    '',
    ...r.notes.flatMap((n) => [n, '']),
    '| conformance tests | passed | failed | skipped | cases passed | cases failed |',
    '| ---: | ---: | ---: | ---: | ---: | ---: |',
    `| ${tests.length} | ${count('pass')} | ${count('fail')} | ${count('skip')} | ${cases.filter((c) => c.status === 'pass').length} | ${cases.filter((c) => c.status === 'fail').length} |`,
  );
  if (r.run.top && r.run.top.status !== 'pass' && tests.length === 0) {
    const setup = r.run.topOutput.filter((l) => /Error|error|FAIL|Fatal/.test(l)).slice(-5);
    out.push('', `The suite stopped before any test ran: ${cell(setup.join(' ').trim())}`);
  }
  out.push('', '| test | result | cases (passed/run) | duration |', '| --- | --- | ---: | ---: |');
  for (const { test, cases: cs } of tests) {
    const result =
      test.status === 'skip' ? `skipped (${test.skipReason ?? 'by the suite'})` : test.status;
    out.push(
      `| ${test.test} | ${cell(result)} | ${cs.filter((c) => c.status === 'pass').length}/${cs.length} | ${test.seconds.toFixed(1)} s |`,
    );
  }
  // Each failed case, and a failed test only when none of its cases failed (it failed itself).
  const failed = r.run.cases.filter(
    (c) =>
      c.status === 'fail' &&
      (c.case !== '' ||
        !r.run.cases.some((d) => d.test === c.test && d.case !== '' && d.status === 'fail')),
  );
  if (failed.length) {
    out.push(
      '',
      '#### Failed cases',
      '',
      '| test | case | what failed | why |',
      '| --- | --- | --- | --- |',
    );
    for (const c of failed)
      out.push(
        `| ${c.test} | ${cell(c.case || '(the test itself)')} | ${cell(failureText(c))} | ${cell(r.explain?.(c) ?? '')} |`,
      );
  }
  if (r.suiteReport) {
    out.push(
      '',
      "#### The suite's own report (`--report-output`)",
      '',
      '```yaml',
      r.suiteReport.trimEnd(),
      '```',
    );
  }
  out.push('', END);
  return out.join('\n');
}

export async function writeCnpResults(file: string, r: CnpReport): Promise<void> {
  await writeSection(file, BEGIN, END, renderCnp(r));
}
