import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { byTest, failureOf, foldEvents, splitName } from './events.js';
import { explainFailure, runNotes } from './lab.js';
import { imagesIn } from './prepare.js';
import { BEGIN, END, renderCnp } from './report.js';
import { CNP_BINARY_NO_SCTP, suiteArgs } from './run.js';

const T = 'TestConformanceProfiles';
const ev = (Action: string, Test?: string, extra: object = {}) =>
  JSON.stringify({ Action, ...(Test ? { Test } : {}), ...extra });

// What `go tool test2json -t` writes for the suite (trimmed): a skipped test (SkipTests), a
// passing test with one case, a failing test whose second case failed on a probe.
const EVENTS = [
  ev('start'),
  ev('run', T),
  ev('output', T, { Output: '    conformance_suite.go:1: Test Setup: Applying base manifests\n' }),
  ev('run', `${T}/CNPAdminTierEgressSCTP`),
  ev('output', `${T}/CNPAdminTierEgressSCTP`, {
    Output: '    suite.go:217: Skipping CNPAdminTierEgressSCTP\n',
  }),
  ev('pass', `${T}/CNPAdminTierEgressSCTP`, { Elapsed: 0 }),
  ev('run', `${T}/CNPAdminTierIngressTCP`),
  ev('run', `${T}/CNPAdminTierIngressTCP/Should_support_a_'deny-ingress'_policy_for_TCP_protocol`),
  ev(
    'pass',
    `${T}/CNPAdminTierIngressTCP/Should_support_a_'deny-ingress'_policy_for_TCP_protocol`,
    {
      Elapsed: 12.5,
    },
  ),
  ev('pass', `${T}/CNPAdminTierIngressTCP`, { Elapsed: 14 }),
  ev('run', `${T}/CNPAdminTierGress`),
  ev('run', `${T}/CNPAdminTierGress/Should_support_an_'allow-gress'_policy`),
  ev('pass', `${T}/CNPAdminTierGress/Should_support_an_'allow-gress'_policy`, { Elapsed: 3 }),
  ev('run', `${T}/CNPAdminTierGress/Should_support_an_'deny-gress'_policy`),
  ...[
    '    helper.go:97: FAILED Command was [/agnhost connect --timeout=3s --protocol=tcp 2001:db8:100::5:80]\n',
    '    helper.go:98: Expected connection to be dropped from ns/harry-potter-0 to 2001:db8:100::5, but instead it successfully connected.\n',
    '    helper.go:76: \n',
    '        \tError Trace:\t/root/go/pkg/mod/sigs.k8s.io/network-policy-api@v0.3.0/conformance/utils/kubernetes/helper.go:72\n',
    '        \t            \t/root/go/pkg/mod/sigs.k8s.io/network-policy-api@v0.3.0/conformance/tests/admin-network-policy-standard-gress-rules.go:162\n',
    '        \tError:      \tCondition never satisfied\n',
  ].map((Output) =>
    ev('output', `${T}/CNPAdminTierGress/Should_support_an_'deny-gress'_policy`, { Output }),
  ),
  ev('fail', `${T}/CNPAdminTierGress/Should_support_an_'deny-gress'_policy`, { Elapsed: 10.5 }),
  ev('fail', `${T}/CNPAdminTierGress`, { Elapsed: 14 }),
  ev('output', T, { Output: 'Conformance report:\n' }),
  ev('fail', T, { Elapsed: 40 }),
].join('\n');

describe('test2json events', () => {
  it('splits the test name into the conformance test and its case', () => {
    expect(splitName(`${T}/CNPAdminTierGress/Should_deny_a/b`)).toEqual({
      top: T,
      test: 'CNPAdminTierGress',
      case: 'Should deny a/b',
    });
    expect(splitName(T)).toEqual({ top: T });
  });

  it('folds each test and case with its status, a SkipTests skip as skipped, a failure with its probe', () => {
    const run = foldEvents(EVENTS);
    expect(run.top).toEqual({ name: T, status: 'fail', seconds: 40 });
    // In the order they started: a test before its cases.
    expect(run.cases.map((c) => [c.test, c.case, c.status])).toEqual([
      ['CNPAdminTierEgressSCTP', '', 'skip'],
      ['CNPAdminTierIngressTCP', '', 'pass'],
      ['CNPAdminTierIngressTCP', "Should support a 'deny-ingress' policy for TCP protocol", 'pass'],
      ['CNPAdminTierGress', '', 'fail'],
      ['CNPAdminTierGress', "Should support an 'allow-gress' policy", 'pass'],
      ['CNPAdminTierGress', "Should support an 'deny-gress' policy", 'fail'],
    ]);
    expect(run.cases[0]!.skipReason).toBe('Skipping CNPAdminTierEgressSCTP');
    expect(run.cases[5]!.failure).toEqual({
      command: '[/agnhost connect --timeout=3s --protocol=tcp 2001:db8:100::5:80]',
      expected:
        'Expected connection to be dropped from ns/harry-potter-0 to 2001:db8:100::5, but instead it successfully connected.',
      error: 'Condition never satisfied',
      at: 'conformance/tests/admin-network-policy-standard-gress-rules.go:162',
    });
    expect(byTest(run).map((t) => [t.test.test, t.cases.length])).toEqual([
      ['CNPAdminTierEgressSCTP', 0],
      ['CNPAdminTierIngressTCP', 1],
      ['CNPAdminTierGress', 2],
    ]);
  });

  it('counts a test the binary never finished as failed', () => {
    const run = foldEvents([ev('run', T), ev('run', `${T}/CNPAdminTierGress`)].join('\n'));
    expect(run.cases.map((c) => c.status)).toEqual(['fail']);
    expect(failureOf([])).toEqual({});
  });
});

describe('the report', () => {
  it('summarises, lists every test and each failed case with the probe and why', () => {
    const md = renderCnp({
      date: new Date('2026-12-02T02:00:00.5Z'),
      nodes: 2,
      versions: { kernel: '6.18' },
      command: ['cnp-conformance-no-sctp.test', '-conformance-profiles=ClusterNetworkPolicy'],
      seconds: 75,
      run: foldEvents(EVENTS),
      suiteReport: 'kind: ConformanceReport\n',
      explain: () => 'because',
      notes: ['A note.'],
    });
    expect(md.startsWith(BEGIN) && md.endsWith(END)).toBe(true);
    expect(md).toContain('Run of 2026-12-02T02:00:00Z on a lab of 2 real nodes, 1 min 15 s.');
    expect(md).toContain('| 3 | 1 | 1 | 1 | 2 | 1 |');
    expect(md).toContain(
      '| CNPAdminTierEgressSCTP | skipped (Skipping CNPAdminTierEgressSCTP) | 0/0 | 0.0 s |',
    );
    expect(md).toContain('| CNPAdminTierGress | fail | 1/2 | 14.0 s |');
    // The failed case, not again its test.
    expect(md).toContain(
      "| CNPAdminTierGress | Should support an 'deny-gress' policy | `[/agnhost connect --timeout=3s --protocol=tcp 2001:db8:100::5:80]`: Expected connection to be dropped",
    );
    expect(md).not.toContain('(the test itself)');
    expect(md).toContain('```yaml\nkind: ConformanceReport\n```');
  });

  it('blames the kernel only for SCTP probes, and only without SCTP', () => {
    const sctp = { test: 'x', case: 'y', status: 'fail' as const, seconds: 1 };
    const probe = (p: string) => ({
      ...sctp,
      failure: { command: `/agnhost connect --protocol=${p} a:1` },
    });
    expect(explainFailure(false)(probe('sctp'))).toMatch(/no SCTP/);
    expect(explainFailure(false)(probe('tcp'))).toBeUndefined();
    expect(explainFailure(true)(probe('sctp'))).toBeUndefined();
    expect(runNotes(CNP_BINARY_NO_SCTP, ['A']).join(' ')).toMatch(
      /without its SCTP servers.*Only these tests/s,
    );
  });
});

describe('the suite command line', () => {
  it('selects the profile, its features, and the tests asked for', () => {
    const args = suiteArgs(
      { kubeconfig: '/k', reportDir: '/r', sctp: false, version: 'git 1', tests: ['A', 'B'] },
      '/r/x.yaml',
    );
    expect(args).toContain('-test.run=^TestConformanceProfiles$/^(A|B)$');
    expect(args).toContain('-conformance-profiles=ClusterNetworkPolicy');
    expect(args).toContain(
      '-supported-features=ClusterNetworkPolicy,ClusterNetworkPolicyNamedPorts,ClusterNetworkPolicyEgressNodePeers',
    );
    expect(args).toContain('-report-output=/r/x.yaml');
  });
});

describe('imagesIn', () => {
  it('finds every image of the YAML files under a directory, once', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'cnp-images-'));
    try {
      await writeFile(
        join(dir, 'a.yaml'),
        'spec:\n  containers:\n    - name: a\n      image: registry.k8s.io/e2e-test-images/agnhost:2.45\n    - image: "x:1"\n',
      );
      await writeFile(
        join(dir, 'b.yml'),
        '      image: registry.k8s.io/e2e-test-images/agnhost:2.45\n',
      );
      await writeFile(join(dir, 'c.txt'), 'image: not-yaml\n');
      expect(await imagesIn(dir)).toEqual(['registry.k8s.io/e2e-test-images/agnhost:2.45', 'x:1']);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});
