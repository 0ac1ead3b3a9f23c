// `./dev test`'s share of Kubernetes' own e2e suite (docs/conformance.md): one upstream Netpol
// spec per policy feature, the HostPort [Conformance] spec, the DNS [Conformance] spec "should
// provide DNS for the cluster" and the AdmissionWebhook [Conformance] spec "should be able to deny
// pod and configmap creation" (conformance/suites.ts), unmodified, run by ginkgo against a lab of
// two real nodes. The whole suite and the CNI specs are
// `npm run test:conformance`.
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ran } from '../conformance/report.js';
import {
  CONFORMANCE_LAB,
  CONFORMANCE_TOOLS,
  preloadConformanceImages,
  runSuite,
} from '../conformance/run.js';
import { CNI_SUBSET, POLICY_SUBSET, SUBSET } from '../conformance/suites.js';
import { startLab } from '../core/test-lab.js';

const { lab, dir } = startLab({
  tmpPrefix: 'flock-conformance-it-',
  tools: CONFORMANCE_TOOLS,
  labSubdir: 'lab',
  nodes: 2,
  ...CONFORMANCE_LAB,
  setup: preloadConformanceImages,
});

describe("Kubernetes' Netpol e2e specs, one per NetworkPolicy feature, the HostPort, DNS and webhook specs", () => {
  it('every spec of the subset passes on the lab', async () => {
    const reportDir = process.env['FLOCK_TEST_RESULTS']
      ? join(process.env['FLOCK_TEST_RESULTS'], 'conformance')
      : join(dir, 'report');
    const report = await runSuite(lab, SUBSET, { procs: 2, reportDir });
    const specs = ran(report.specs);
    // Each feature's spec ran, exactly once (a renamed upstream spec must not drop silently).
    for (const { feature, spec } of [...POLICY_SUBSET, ...CNI_SUBSET])
      expect(
        specs.filter((s) => s.name.includes(spec)).map((s) => s.name),
        feature,
      ).toHaveLength(1);
    expect(specs).toHaveLength(POLICY_SUBSET.length + CNI_SUBSET.length);
    const failed = specs
      .filter((s) => s.status !== 'passed')
      .map((s) => `${s.name}: ${s.status}: ${s.message ?? ''}`);
    expect(failed, `see ${reportDir}`).toEqual([]);
  }, 1_800_000);
});
