#!/usr/bin/env node
// `npm run test:conformance:cnp [-- OPTIONS]`: sig-network's ClusterNetworkPolicy conformance
// suite (sigs.k8s.io/network-policy-api conformance/, the ClusterNetworkPolicy profile) against a
// lab of real nodes (docs/conformance.md). Brings up a lab (flock as processes, the upstream CRD
// applied as the chart would), tags the lab's agnhost under the references the suite's manifests
// name, runs TestConformanceProfiles with the profile's standard and experimental features, and
// writes the suite's report and the results section of docs/conformance.md; exits non-zero if a
// test failed.
//   --nodes N         lab nodes (default 3)
//   --test NAME       only this conformance test (ShortName); repeatable
//   --report-dir DIR  default .cache/conformance-report
//   --no-docs         do not rewrite docs/conformance.md
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createLogger } from '@flock/kube';
import { option } from '../conformance/options.js';
import { loadSctp } from '../conformance/prepare.js';
import { conformanceVersions } from './versions.js';
import { cnpLab, explainFailure, runNotes } from './lab.js';
import { writeCnpResults } from './report.js';
import { runCnpSuite } from './run.js';

const root = new URL('../../../../', import.meta.url).pathname;
const say = (line: string) => console.log(`cnp-conformance: ${line}`);

async function main(args: string[]): Promise<number> {
  const nodes = Number(option(args, '--nodes')[0] ?? 3);
  const tests = option(args, '--test');
  const reportDir = option(args, '--report-dir')[0] ?? join(root, '.cache', 'conformance-report');
  const sctp = await loadSctp();
  say(`SCTP: ${sctp.available ? 'available' : 'not available'}\n${sctp.evidence}`);
  const dir = await mkdtemp(join(tmpdir(), 'flock-cnp-conformance-'));
  const started = new Date();
  const lab = await cnpLab({
    dir,
    nodes,
    log: createLogger('lab', 'warn'),
    progress: (l) => say(`lab: ${l}`),
  });
  const stop = () => void lab.down().finally(() => process.exit(130));
  process.once('SIGINT', stop);
  process.once('SIGTERM', stop);
  let failed = 1;
  try {
    const versions = await conformanceVersions(lab);
    say(
      `running TestConformanceProfiles (profile ClusterNetworkPolicy)${tests.length ? `: ${tests.join(', ')}` : ''}`,
    );
    const r = await runCnpSuite({
      kubeconfig: lab.cp!.kubeconfigPath,
      reportDir,
      sctp: sctp.available,
      version: versions['flock'] ?? 'unknown',
      tests,
      onResult: (l) => say(l),
    });
    const bad = r.run.cases.filter((c) => c.status === 'fail');
    failed = r.code === 0 && bad.length === 0 ? 0 : 1;
    say(
      `exit ${r.code}: ${r.run.cases.filter((c) => c.case === '').length} tests, ${bad.length} failed tests and cases, ${Math.round(r.seconds)} s; events in ${r.log}`,
    );
    if (!args.includes('--no-docs')) {
      await writeCnpResults(join(root, 'docs', 'conformance.md'), {
        date: started,
        nodes,
        versions: { ...versions, 'network-policy-api conformance suite': r.suiteVersion },
        command: r.args.filter(
          (a) => !a.startsWith('-kubeconfig=') && !a.startsWith('-report-output='),
        ),
        seconds: r.seconds,
        run: r.run,
        ...(r.report !== undefined && !tests.length ? { suiteReport: r.report } : {}),
        explain: explainFailure(sctp.available),
        notes: runNotes(r.binary, tests),
      });
      say('wrote docs/conformance.md');
    }
  } finally {
    await lab.down();
    await rm(dir, { recursive: true, force: true });
  }
  say(`the suite's report and the events in ${reportDir}`);
  return failed;
}

main(process.argv.slice(2)).then(
  (code) => process.exit(code),
  (e: unknown) => {
    console.error(`cnp-conformance: ${e instanceof Error ? e.message : String(e)}`);
    process.exit(1);
  },
);
