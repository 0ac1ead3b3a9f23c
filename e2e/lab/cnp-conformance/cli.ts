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
//   --install helm    flock by its chart from its images (default: as processes); implies --no-docs
//   --set KEY=VALUE   a chart value with --install helm (repeatable), e.g. peerRelay.enabled=true
import { option } from '../conformance/options.js';
import { conformanceMain, type SuiteContext } from '../conformance/runner.js';
import { conformanceVersions } from './versions.js';
import { cnpLab, explainFailure, runNotes } from './lab.js';
import { writeCnpResults } from './report.js';
import { runCnpSuite } from './run.js';

async function suite({ args, lab, nodes, reportDir, sctp, started, docs, say }: SuiteContext) {
  const tests = option(args, '--test');
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
  say(
    `exit ${r.code}: ${r.run.cases.filter((c) => c.case === '').length} tests, ${bad.length} failed tests and cases, ${Math.round(r.seconds)} s; events in ${r.log}`,
  );
  if (docs)
    await writeCnpResults(docs, {
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
  return r.code === 0 ? bad.length : Math.max(1, bad.length);
}

conformanceMain({
  name: 'cnp-conformance',
  lab: cnpLab,
  suite,
  leaves: "the suite's report and the events",
});
