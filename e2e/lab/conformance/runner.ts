// What both conformance runners (`npm run test:conformance`, `npm run test:conformance:cnp`) do
// around their suite: the common options, SCTP loaded if the kernel has it, a lab brought up in
// a temporary directory and taken down however the run ends (Ctrl-C too), and the exit code.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createLogger } from '@flock/kube';
import type { Lab } from '../core/lab.js';
import { MAX_NODES } from '../core/plan.js';
import type { ConformanceLabOptions } from './run.js';
import { option } from './options.js';
import { loadSctp, type SctpSupport } from './prepare.js';

export const REPO_ROOT = new URL('../../../../', import.meta.url).pathname;

export interface SuiteContext {
  args: string[];
  lab: Lab;
  nodes: number;
  reportDir: string;
  sctp: SctpSupport;
  started: Date;
  /** docs/conformance.md, or undefined with --no-docs. */
  docs: string | undefined;
  say: (line: string) => void;
}

export interface ConformanceRunner {
  /** The prefix of every line the runner prints ("conformance", "cnp-conformance"). */
  name: string;
  lab: (o: Omit<ConformanceLabOptions, 'tools' | 'preload'>) => Promise<Lab>;
  /** Rejects bad options before a lab is brought up. */
  check?: (args: string[]) => void;
  /** Runs the suite and writes its docs section; resolves to the number of failures. */
  suite: (c: SuiteContext) => Promise<number>;
  /** What is left in the report directory, for the last line. */
  leaves: string;
}

/**
 * How the lab installs flock: `--install processes` (the default: flock as processes on the
 * nodes) or `--install helm` (its chart from its images), `--set KEY=VALUE` chart values
 * (repeatable; implies helm). docs/conformance.md's results sections are the default lab's, so a
 * run installed otherwise does not rewrite them.
 */
export function installOptions(
  args: string[],
): Pick<ConformanceLabOptions, 'install' | 'helmValues'> {
  const install = option(args, '--install')[0] ?? 'processes';
  const helmValues = option(args, '--set');
  if (install !== 'processes' && install !== 'helm')
    throw new Error(`--install ${install}: processes or helm`);
  for (const v of helmValues)
    if (!/^[A-Za-z0-9_.[\]-]+=/.test(v)) throw new Error(`--set ${v}: KEY=VALUE`);
  if (helmValues.length && install !== 'helm')
    throw new Error('--set: chart values need --install helm');
  return install === 'helm' ? { install, helmValues } : {};
}

/** Common options: --nodes N (default 3), --report-dir DIR, --no-docs, --install, --set. */
async function run(r: ConformanceRunner, args: string[]): Promise<number> {
  const say = (line: string) => console.log(`${r.name}: ${line}`);
  r.check?.(args);
  const install = installOptions(args);
  const nodes = Number(option(args, '--nodes')[0] ?? 3);
  if (!Number.isInteger(nodes) || nodes < 1 || nodes > MAX_NODES)
    throw new Error(`--nodes: 1..${MAX_NODES}`);
  const reportDir =
    option(args, '--report-dir')[0] ?? join(REPO_ROOT, '.cache', 'conformance-report');
  const sctp = await loadSctp();
  say(`SCTP: ${sctp.available ? 'available' : 'not available'}\n${sctp.evidence}`);
  const dir = await mkdtemp(join(tmpdir(), `flock-${r.name}-`));
  const started = new Date();
  const lab = await r.lab({
    dir,
    nodes,
    log: createLogger('lab', 'warn'),
    progress: (l) => say(`lab: ${l}`),
    ...install,
  });
  const stop = () => void lab.down().finally(() => process.exit(130));
  process.once('SIGINT', stop);
  process.once('SIGTERM', stop);
  let failures: number;
  try {
    // A run narrowed by --focus, or of another install, is not the default suite's result.
    const docs =
      args.includes('--no-docs') || args.includes('--focus') || install.install
        ? undefined
        : join(REPO_ROOT, 'docs', 'conformance.md');
    failures = await r.suite({ args, lab, nodes, reportDir, sctp, started, docs, say });
    if (docs) say('wrote docs/conformance.md');
  } finally {
    await lab.down();
    await rm(dir, { recursive: true, force: true });
  }
  say(`${r.leaves} in ${reportDir}`);
  return failures ? 1 : 0;
}

/** The runner's main: exits 0 when every spec passed, 1 otherwise or on an error. */
export function conformanceMain(r: ConformanceRunner): void {
  run(r, process.argv.slice(2)).then(
    (code) => process.exit(code),
    (e: unknown) => {
      console.error(`${r.name}: ${e instanceof Error ? e.message : String(e)}`);
      process.exit(1);
    },
  );
}
