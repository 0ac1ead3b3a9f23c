#!/usr/bin/env node
// `npm run test:conformance [-- OPTIONS]`: Kubernetes' own sig-network e2e specs, unmodified,
// against a lab of real nodes (docs/conformance.md). Brings up a lab, loads SCTP if the kernel
// has it, runs every suite of suites.ts with ginkgo's parallel processes, writes the JUnit reports
// into --report-dir and the results section of docs/conformance.md; exits non-zero if any spec
// failed.
//   --suite NAME      only this suite (netpol, cni, netpol-subset); repeatable
//   --procs N         ginkgo processes (default 3)
//   --nodes N         lab nodes (default 3)
//   --report-dir DIR  default .cache/conformance-report
//   --no-docs         do not rewrite docs/conformance.md
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createLogger } from '@flock/kube';
import { option } from './options.js';
import { ran, writeResults, type SuiteReport } from './report.js';
import { conformanceLab, runSuite, versions } from './run.js';
import { loadSctp } from './prepare.js';
import { ALL_SUITES, SUBSET } from './suites.js';

const root = new URL('../../../../', import.meta.url).pathname;
const say = (line: string) => console.log(`conformance: ${line}`);

async function main(args: string[]): Promise<number> {
  const names = option(args, '--suite');
  const known = [...ALL_SUITES, SUBSET];
  const suites = names.length
    ? names.map((n) => {
        const s = known.find((k) => k.name === n);
        if (!s) throw new Error(`--suite ${n}: one of ${known.map((k) => k.name).join(', ')}`);
        return s;
      })
    : ALL_SUITES;
  const procs = Number(option(args, '--procs')[0] ?? 3);
  const nodes = Number(option(args, '--nodes')[0] ?? 3);
  const reportDir = option(args, '--report-dir')[0] ?? join(root, '.cache', 'conformance-report');
  const sctp = await loadSctp();
  say(`SCTP: ${sctp.available ? 'available' : 'not available'}\n${sctp.evidence}`);
  const dir = await mkdtemp(join(tmpdir(), 'flock-conformance-'));
  const started = new Date();
  const lab = await conformanceLab({
    dir,
    nodes,
    log: createLogger('lab', 'warn'),
    progress: (l) => say(`lab: ${l}`),
  });
  const stop = () => void lab.down().finally(() => process.exit(130));
  process.once('SIGINT', stop);
  process.once('SIGTERM', stop);
  const reports: SuiteReport[] = [];
  try {
    const v = await versions(lab);
    for (const suite of suites) {
      say(`running ${suite.name} (${procs} ginkgo processes): ${suite.about}`);
      const r = await runSuite(lab, suite, {
        procs,
        reportDir,
        sctp,
        onLine: (l) => {
          if (/^\s*(•|\[FAIL\]|\[PANICKED\]|Ran \d+|FAIL!|SUCCESS!|Summarizing)/.test(l))
            console.log(`  ${l}`);
        },
      });
      const failed = ran(r.specs).filter((s) => s.status !== 'passed');
      say(
        `${suite.name}: ${ran(r.specs).length} ran, ${failed.length} failed in ${Math.round(r.seconds)} s` +
          failed.map((f) => `\n  FAILED ${f.name}: ${f.message ?? f.status}`).join(''),
      );
      reports.push(r);
    }
    if (!args.includes('--no-docs')) {
      await writeResults(join(root, 'docs', 'conformance.md'), {
        date: started,
        versions: v,
        nodes,
        sctpEvidence: sctp.evidence,
        suites: reports,
      });
      say('wrote docs/conformance.md');
    }
  } finally {
    await lab.down();
    await rm(dir, { recursive: true, force: true });
  }
  say(`JUnit reports and logs in ${reportDir}`);
  const failures = reports.flatMap((r) => ran(r.specs)).filter((s) => s.status !== 'passed');
  return failures.length ? 1 : 0;
}

main(process.argv.slice(2)).then(
  (code) => process.exit(code),
  (e: unknown) => {
    console.error(`conformance: ${e instanceof Error ? e.message : String(e)}`);
    process.exit(1);
  },
);
