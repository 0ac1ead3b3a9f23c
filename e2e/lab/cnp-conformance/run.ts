// One run of network-policy-api's conformance binary (scripts/build-cnp-conformance.sh) against
// a lab, for the ClusterNetworkPolicy profile: through `go tool test2json`, so that every test and
// case has its status, duration and output; the suite's own report (--report-output) beside it.
import { spawn } from 'node:child_process';
import { createWriteStream, readFileSync, realpathSync } from 'node:fs';
import { mkdir, readFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { requireTools, which } from '@flock/testkit';
import { foldEvents, splitName, type SuiteRun } from './events.js';

/** The upstream package, unmodified (`go test -c`). */
export const CNP_BINARY = 'cnp-conformance.test';
/** The same tests for a kernel without SCTP (e2e/cnp-conformance/nosctp). */
export const CNP_BINARY_NO_SCTP = 'cnp-conformance-no-sctp.test';
export const PROFILE = 'ClusterNetworkPolicy';
/** The profile's standard feature and both of its experimental ones (named ports, node peers). */
export const FEATURES = [
  'ClusterNetworkPolicy',
  'ClusterNetworkPolicyNamedPorts',
  'ClusterNetworkPolicyEgressNodePeers',
] as const;
/** The SCTP-only tests the no-SCTP binary skips (nosctp_test.go SCTPOnlyTests). */
export const SCTP_ONLY_TESTS = [
  'CNPAdminTierEgressSCTP',
  'CNPAdminTierIngressSCTP',
  'CNPBaselineTierEgressSCTP',
  'CNPBaselineTierIngressSCTP',
] as const;

export interface CnpRunOptions {
  kubeconfig: string;
  reportDir: string;
  /** Whether the kernel has SCTP: picks the binary. */
  sctp: boolean;
  /** flock's version for the report (e.g. git abc1234). */
  version: string;
  features?: readonly string[];
  /** Only these conformance tests (ShortNames); default all. */
  tests?: readonly string[];
  /** go test -test.timeout (default 2h). */
  timeout?: string;
  /** A line for each conformance test that ends. */
  onResult?: (line: string) => void;
}

export interface CnpRunResult {
  binary: string;
  /** sigs.k8s.io/network-policy-api's version the binary was built from. */
  suiteVersion: string;
  code: number;
  run: SuiteRun;
  /** The suite's own ConformanceReport (YAML), if it wrote one. */
  report?: string;
  log: string;
  seconds: number;
  /** The command line, for the docs. */
  args: string[];
}

/** The version the build script recorded beside the binary. */
export function suiteVersion(binary: string): string {
  const dir = dirname(realpathSync(which(binary)!));
  return readFileSync(join(dir, 'network-policy-api.version'), 'utf8').trim();
}

export function suiteArgs(o: CnpRunOptions, reportFile: string): string[] {
  const only = o.tests?.length ? `/^(${o.tests.join('|')})$` : '';
  return [
    '-test.v=test2json',
    `-test.run=^TestConformanceProfiles$${only}`,
    `-test.timeout=${o.timeout ?? '2h'}`,
    `-kubeconfig=${o.kubeconfig}`,
    `-conformance-profiles=${PROFILE}`,
    `-supported-features=${(o.features ?? FEATURES).join(',')}`,
    '-organization=fritzlab',
    '-project=flock',
    '-url=https://github.com/fritzlab/flock',
    `-version=${o.version}`,
    '-contact=flock maintainers',
    '-additional-info=docs/conformance.md (npm run test:conformance:cnp on the lab)',
    `-report-output=${reportFile}`,
  ];
}

export async function runCnpSuite(o: CnpRunOptions): Promise<CnpRunResult> {
  const binary = o.sctp ? CNP_BINARY : CNP_BINARY_NO_SCTP;
  requireTools('go', binary);
  await mkdir(o.reportDir, { recursive: true });
  const reportFile = join(o.reportDir, 'cnp-conformance-report.yaml');
  const jsonl = join(o.reportDir, 'cnp-conformance.jsonl');
  const args = suiteArgs(o, reportFile);
  const started = Date.now();
  const out = createWriteStream(jsonl);
  const child = spawn(
    which('go')!,
    ['tool', 'test2json', '-t', '-p', 'cnp-conformance', which(binary)!, ...args],
    { env: { ...process.env, KUBECONFIG: o.kubeconfig }, stdio: ['ignore', 'pipe', 'pipe'] },
  );
  let text = '';
  let pending = '';
  const progress = progressOf(o.onResult);
  child.stdout.on('data', (chunk: Buffer) => {
    out.write(chunk);
    text += chunk.toString();
    pending += chunk.toString();
    const lines = pending.split('\n');
    pending = lines.pop()!;
    for (const l of lines) progress(l);
  });
  child.stderr.on('data', (chunk: Buffer) => out.write(chunk));
  const code = await new Promise<number>((resolve) => child.on('exit', (c) => resolve(c ?? 1)));
  await new Promise<void>((resolve) => out.end(resolve));
  const report = await readFile(reportFile, 'utf8').catch(() => undefined);
  return {
    binary,
    suiteVersion: suiteVersion(binary),
    code,
    run: foldEvents(text),
    ...(report !== undefined ? { report } : {}),
    log: jsonl,
    seconds: (Date.now() - started) / 1000,
    args: [binary, ...args],
  };
}

/** A line per conformance test that ends (a SkipTests test logs "Skipping" and passes). */
function progressOf(onResult?: (line: string) => void): (line: string) => void {
  const skipped = new Set<string>();
  return (line) => {
    if (!onResult || !line.startsWith('{')) return;
    const e = JSON.parse(line) as {
      Action?: string;
      Test?: string;
      Elapsed?: number;
      Output?: string;
    };
    if (!e.Test) return;
    const n = splitName(e.Test);
    if (n.test === undefined || n.case !== undefined) return;
    if (e.Action === 'output' && / Skipping /.test(e.Output ?? '')) skipped.add(n.test);
    if (!['pass', 'fail', 'skip'].includes(e.Action ?? '')) return;
    const status = e.Action === 'pass' && skipped.has(n.test) ? 'skip' : e.Action!;
    onResult(`${status.toUpperCase()} ${n.test} (${(e.Elapsed ?? 0).toFixed(1)} s)`);
  };
}
