#!/usr/bin/env node
// `npm run test:conformance [-- OPTIONS]`: Kubernetes' own sig-network e2e specs, unmodified,
// against a lab of real nodes (docs/conformance.md). Brings up a lab, loads SCTP if the kernel
// has it, runs every suite of suites.ts with ginkgo's parallel processes, writes the JUnit reports
// into --report-dir and the results sections of docs/conformance.md (the loadbalancer suite's a
// section of its own); exits non-zero if any spec failed.
//   --suite NAME      only this suite (netpol, cni, netpol-subset, hostport, dns, webhook, loadbalancer,
//                     loadbalancer-ipv4: on an IPv4-first lab; conformance, conformance-serial: the
//                     certification run, every [Conformance] spec of all of test/e2e, whose binary
//                     this builds first; sig-network: its non-disruptive Services, DNS,
//                     Networking, ... specs); repeatable, one lab for all
//   --procs N         ginkgo processes (default 3)
//   --nodes N         lab nodes (default 3)
//   --report-dir DIR  default .cache/conformance-report
//   --no-docs         do not rewrite docs/conformance.md
//   --install helm    flock by its chart from its images (default: as processes); implies --no-docs
//   --set KEY=VALUE   a chart value with --install helm (repeatable), e.g. peerRelay.enabled=true
//   --focus REGEX     only the selected suites' specs matching REGEX (repeatable, ORed; their
//                     skips still apply): to run again a spec that failed. Implies --no-docs
import { join } from 'node:path';
import { run } from '@flock/exec';
import { REPO_ROOT } from '../core/plan.js';
import { option } from './options.js';
import { ran, SECTIONS, writeResults, type SuiteReport } from './report.js';
import { conformanceLab, runSuite, versions } from './run.js';
import { conformanceMain, type SuiteContext } from './runner.js';
import { E2E_ALL_BINARY, E2E_BINARY } from './ginkgo.js';
import {
  ALL_SUITES,
  CONFORMANCE,
  CONFORMANCE_SERIAL,
  DNS,
  HOSTPORT,
  LOADBALANCER,
  LOADBALANCER_IPV4,
  SIG_NETWORK,
  SUBSET,
  WEBHOOK,
  type Suite,
} from './suites.js';

function selected(args: string[]) {
  const names = option(args, '--suite');
  const known = [
    ...ALL_SUITES,
    SUBSET,
    HOSTPORT,
    DNS,
    WEBHOOK,
    LOADBALANCER,
    LOADBALANCER_IPV4,
    CONFORMANCE,
    CONFORMANCE_SERIAL,
    SIG_NETWORK,
  ];
  const focus = option(args, '--focus');
  const narrowed = (s: Suite): Suite => (focus.length ? { ...s, focus } : s);
  if (!names.length) return ALL_SUITES.map(narrowed);
  const suites = names.map((n) => {
    const s = known.find((k) => k.name === n);
    if (!s) throw new Error(`--suite ${n}: one of ${known.map((k) => k.name).join(', ')}`);
    return narrowed(s);
  });
  const families = new Set(suites.map((s) => s.primaryFamily ?? 'IPv6'));
  if (families.size > 1)
    throw new Error(
      `--suite: ${names.join(', ')} need labs of different first families; run them one at a time`,
    );
  return suites;
}

/** The first family of the lab the selected suites need. */
const primaryFamily = (args: string[]) => selected(args)[0]?.primaryFamily ?? 'IPv6';

async function suites({ args, lab, nodes, reportDir, sctp, started, docs, say }: SuiteContext) {
  const procs = Number(option(args, '--procs')[0] ?? 3);
  const reports: SuiteReport[] = [];
  const bySection = new Map<keyof typeof SECTIONS, SuiteReport[]>();
  const v = await versions(lab);
  for (const suite of selected(args)) {
    say(`running ${suite.name} (${suite.procs ?? procs} ginkgo processes): ${suite.about}`);
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
    const section = suite.section ?? 'main';
    bySection.set(section, [...(bySection.get(section) ?? []), r]);
  }
  if (docs)
    for (const [section, list] of bySection)
      await writeResults(
        docs,
        {
          date: started,
          versions: v,
          nodes,
          ...(section === 'main' ? { sctpEvidence: sctp.evidence } : {}),
          suites: list,
        },
        SECTIONS[section],
      );
  return reports.flatMap((r) => ran(r.specs)).filter((s) => s.status !== 'passed').length;
}

/**
 * The e2e binaries the selected suites run, all of test/e2e built first when one needs it (not
 * built by ./dev setup: a large compile the first time); the lab preloads what they all name.
 */
async function binaries(args: string[]): Promise<string[]> {
  const all = selected(args).some((s) => s.binary === E2E_ALL_BINARY);
  if (all) {
    console.log('conformance: building all of test/e2e (scripts/build-conformance-all.sh)');
    await run('bash', [join(REPO_ROOT, 'scripts', 'build-conformance-all.sh')], {
      timeoutMs: 3_600_000,
    });
  }
  return [E2E_BINARY, ...(all ? [E2E_ALL_BINARY] : [])];
}

conformanceMain({
  name: 'conformance',
  lab: async (o) => {
    const args = process.argv.slice(2);
    return conformanceLab({
      ...o,
      primaryFamily: primaryFamily(args),
      imageBinaries: await binaries(args),
    });
  },
  check: (args) => void selected(args),
  suite: suites,
  leaves: 'JUnit reports and logs',
});
