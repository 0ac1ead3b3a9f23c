// Running Kubernetes' own e2e specs (the binary scripts/build-conformance.sh builds from
// e2e/conformance) against a lab with the ginkgo CLI, which spreads the specs over parallel
// processes and merges their reports into one JUnit file.
import { spawn } from 'node:child_process';
import { createWriteStream } from 'node:fs';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { requireTools, which } from '@flock/testkit';
import { parseJUnit, type SpecResult } from './junit.js';

export const E2E_BINARY = 'e2e-network.test';
/** All of test/e2e (scripts/build-conformance-all.sh): the certification run's specs. */
export const E2E_ALL_BINARY = 'e2e-all.test';
export const GINKGO = 'ginkgo';
/**
 * Where the e2e framework looks for agnhost and the other images the lab assembles
 * (promoterE2eRegistry, and gcEtcdRegistry for the aggregator spec's etcd, in KUBE_TEST_REPO_LIST).
 */
export const E2E_REGISTRY = 'flock.local/e2e-test-images';

export interface GinkgoRun {
  kubeconfig: string;
  /** Regular expressions on the spec's full text (ginkgo --focus; several are ORed). */
  focus: readonly string[];
  skip?: readonly string[];
  /** Parallel ginkgo processes. */
  procs: number;
  /** JUnit report, the run's log and the repo list go here. */
  reportDir: string;
  /** Name of this run's files in reportDir (junit-NAME.xml, NAME.log). */
  name: string;
  /** Whole-run limit (ginkgo --timeout), default 3 h. */
  timeout?: string;
  /** The e2e binary (default E2E_BINARY). */
  binary?: string;
  /** Each line of ginkgo's output as it comes (default: only into the log file). */
  onLine?: (line: string) => void;
  /**
   * Run ginkgo (and so every spec process) inside this network namespace (`ip netns exec`):
   * the specs' own connections then start there, e.g. at the lab's router, outside the cluster.
   */
  netns?: string;
}

export interface GinkgoResult {
  code: number;
  junit: string;
  log: string;
  specs: SpecResult[];
  /** Suite-level nodes that failed ([SynchronizedBeforeSuite] and the like). */
  suiteFailures: SpecResult[];
  seconds: number;
}

/** The registry list the e2e framework reads (KUBE_TEST_REPO_LIST). */
export function repoList(): string {
  return `promoterE2eRegistry: ${E2E_REGISTRY}\ngcEtcdRegistry: ${E2E_REGISTRY}\n`;
}

export async function runGinkgo(o: GinkgoRun): Promise<GinkgoResult> {
  const binary = o.binary ?? E2E_BINARY;
  requireTools(GINKGO, binary);
  await mkdir(o.reportDir, { recursive: true });
  const repoListFile = join(o.reportDir, 'repo-list.yaml');
  await writeFile(repoListFile, repoList());
  const junit = join(o.reportDir, `junit-${o.name}.xml`);
  const log = join(o.reportDir, `${o.name}.log`);
  const args = [
    'run',
    `--procs=${o.procs}`,
    ...o.focus.map((f) => `--focus=${f}`),
    ...(o.skip ?? []).map((s) => `--skip=${s}`),
    `--junit-report=${junit}`,
    `--timeout=${o.timeout ?? '3h'}`,
    '--no-color',
    '--poll-progress-after=300s',
    which(binary)!,
    '--',
    `--kubeconfig=${o.kubeconfig}`,
    '--provider=local',
    `--report-dir=${o.reportDir}`,
    // The lab's nodes are Ready long before; the suite's checks still run.
    '--allowed-not-ready-nodes=0',
    // Spec logs into the log file, not a console.
    '--disable-log-dump',
  ];
  const started = Date.now();
  const out = createWriteStream(log);
  const file = o.netns ? 'ip' : which(GINKGO)!;
  const argv = o.netns ? ['netns', 'exec', o.netns, which(GINKGO)!, ...args] : args;
  out.write(`$ KUBE_TEST_REPO_LIST=${repoListFile} ${[file, ...argv].join(' ')}\n`);
  const child = spawn(file, argv, {
    env: { ...process.env, KUBE_TEST_REPO_LIST: repoListFile },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let pending = '';
  const onData = (chunk: Buffer) => {
    out.write(chunk);
    if (!o.onLine) return;
    pending += chunk.toString();
    const lines = pending.split('\n');
    pending = lines.pop()!;
    for (const l of lines) o.onLine(l);
  };
  child.stdout.on('data', onData);
  child.stderr.on('data', onData);
  const code = await new Promise<number>((resolve) => child.on('exit', (c) => resolve(c ?? 1)));
  await new Promise<void>((resolve) => out.end(resolve));
  const xml = await readFile(junit, 'utf8').catch(() => '');
  if (!xml) throw new Error(`ginkgo wrote no JUnit report (exit ${code}); see ${log}`);
  const all = parseJUnit(xml);
  return {
    code,
    junit,
    log,
    specs: all.filter((r) => r.kind === 'spec'),
    suiteFailures: all.filter((r) => r.kind === 'suite' && r.status !== 'passed'),
    seconds: (Date.now() - started) / 1000,
  };
}
