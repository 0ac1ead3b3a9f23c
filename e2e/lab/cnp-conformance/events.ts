// What `go tool test2json` says of a run of network-policy-api's conformance binary: one JSON
// event per line (run, output, pass, fail, skip; Test names the subtest as
// TestConformanceProfiles/<conformance test>/<case>). Folded into one result per test and per
// case, with, for a failure, the probe that failed and the assertion's place in the upstream code.
import { z } from 'zod';

const Event = z.looseObject({
  Action: z.string(),
  Test: z.string().optional(),
  Elapsed: z.number().optional(),
  Output: z.string().optional(),
});

export type Status = 'pass' | 'fail' | 'skip';

export interface CaseResult {
  /** The conformance test's ShortName (CNPAdminTierIngressTCP). */
  test: string;
  /** The case inside it (t.Run name with spaces), or '' for the test itself. */
  case: string;
  status: Status;
  seconds: number;
  /** For a failure: what failed (the probe and why, the assertion's file:line). */
  failure?: Failure;
  /** For a skip: the reason the suite logged. */
  skipReason?: string;
}

export interface Failure {
  /** `/agnhost connect --timeout=3s --protocol=tcp 10.0.0.2:80` (the last failing probe). */
  command?: string;
  /** The suite's sentence on it ("Expected connection to be dropped ... successfully connected."). */
  expected?: string;
  /** testify's "Error:" line (e.g. "Condition never satisfied"). */
  error?: string;
  /** The assertion's place: conformance/tests/FILE.go:LINE (else the helper's). */
  at?: string;
}

export interface SuiteRun {
  /** The top-level test (TestConformanceProfiles) and its status; undefined if it never ran. */
  top?: { name: string; status: Status | 'running'; seconds: number };
  cases: CaseResult[];
  /** Output of the top-level test itself (setup, the report), in order. */
  topOutput: string[];
}

interface Acc {
  status: Status | 'running';
  seconds: number;
  output: string[];
}

/** The conformance test's ShortName and case of a test2json Test name (underscores as spaces). */
export function splitName(test: string): { top: string; test?: string; case?: string } {
  const [top, name, ...rest] = test.split('/');
  return {
    top: top!,
    ...(name !== undefined ? { test: name } : {}),
    ...(rest.length ? { case: rest.join('/').replace(/_/g, ' ') } : {}),
  };
}

/** The failing probe and assertion in a failed test's output. */
export function failureOf(output: readonly string[]): Failure {
  const f: Failure = {};
  const lines = output
    .flatMap((o) => o.split('\n'))
    .map((l) => l.trim())
    .filter(Boolean);
  let inTrace = false;
  for (const [i, l] of lines.entries()) {
    const cmd = /FAILED Command was (.+)$/.exec(l);
    if (cmd) {
      f.command = cmd[1]!.trim();
      const next = lines.slice(i + 1).find((n) => /Expected connection/.test(n));
      if (next) f.expected = next.replace(/^.*?(Expected connection)/, '$1');
    }
    const err = /^Error:\s+(.+)$/.exec(l);
    if (err) f.error = err[1]!.trim();
    // testify's trace: the helper first, then the upstream test's line that called it.
    const trace = /^Error Trace:\s+(.+)$/.exec(l);
    if (trace) inTrace = true;
    else if (!/^\S+\.go:\d+$/.test(l)) inTrace = false;
    const at = trace ? trace[1]!.trim() : inTrace ? l : undefined;
    if (at && (!f.at || (/conformance\/tests\//.test(at) && !/conformance\/tests\//.test(f.at))))
      f.at = at.replace(/^.*?(conformance\/)/, '$1');
  }
  return f;
}

export function foldEvents(jsonLines: string): SuiteRun {
  const tests = new Map<string, Acc>();
  for (const line of jsonLines.split('\n')) {
    if (!line.trim().startsWith('{')) continue;
    const parsed = Event.safeParse(JSON.parse(line));
    if (!parsed.success || !parsed.data.Test) continue;
    const e = parsed.data;
    const name = e.Test!;
    let acc = tests.get(name);
    if (!acc) tests.set(name, (acc = { status: 'running', seconds: 0, output: [] }));
    if (e.Action === 'output' && e.Output !== undefined) acc.output.push(e.Output);
    if (e.Action === 'pass' || e.Action === 'fail' || e.Action === 'skip') {
      acc.status = e.Action;
      acc.seconds = e.Elapsed ?? 0;
    }
  }
  const run: SuiteRun = { cases: [], topOutput: [] };
  for (const [name, acc] of tests) {
    const n = splitName(name);
    if (n.test === undefined) {
      run.top = { name, status: acc.status, seconds: acc.seconds };
      run.topOutput = acc.output;
      continue;
    }
    // A test or case still "running" at the end: the binary died or timed out under it.
    let status: Status = acc.status === 'running' ? 'fail' : acc.status;
    // The suite's SkipTests: the test logs "Skipping NAME" and returns (go test: pass; the
    // suite's report: skipped). An unsupported feature is a t.Skipf (go test: skip).
    const skipLine = acc.output.find((o) => /^\s*\S+\.go:\d+: Skipping /.test(o));
    if (skipLine && status === 'pass' && n.case === undefined) status = 'skip';
    const r: CaseResult = { test: n.test, case: n.case ?? '', status, seconds: acc.seconds };
    if (status === 'fail') r.failure = failureOf(acc.output);
    if (status === 'skip' && skipLine)
      r.skipReason = skipLine.trim().replace(/^\S+\.go:\d+:\s*/, '');
    run.cases.push(r);
  }
  return run;
}

/** The conformance tests (not their cases), each with its cases. */
export function byTest(run: SuiteRun): { test: CaseResult; cases: CaseResult[] }[] {
  const tops = run.cases.filter((c) => c.case === '');
  return tops.map((t) => ({
    test: t,
    cases: run.cases.filter((c) => c.test === t.test && c.case !== ''),
  }));
}
