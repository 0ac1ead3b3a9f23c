import { describe, expect, it } from 'vitest';
import { E2E_ALL_BINARY } from './ginkgo.js';
import { parseJUnit, tally, unescapeXml } from './junit.js';
import { BEGIN, END, keptSuites, ran, renderResults, type RunReport } from './report.js';
import { installOptions } from './runner.js';
import {
  CNI_SUBSET,
  CONFORMANCE,
  CONFORMANCE_SERIAL,
  DNS,
  WEBHOOK,
  LOADBALANCER,
  LOADBALANCER_IPV4,
  POLICY_SUBSET,
  SIG_NETWORK,
  SUBSET,
} from './suites.js';

// The shape ginkgo 2.28 writes (--junit-report), trimmed.
const JUNIT = `<?xml version="1.0" encoding="UTF-8"?>
<testsuites tests="942" disabled="895" errors="0" failures="1" time="280.8">
  <testsuite name="flock conformance" package="/bin" tests="942" disabled="895" skipped="0" errors="0" failures="1" time="280.8" timestamp="2026-12-01T22:49:01">
    <testcase name="[SynchronizedBeforeSuite]" classname="flock conformance" status="passed" time="0.05"></testcase>
    <testcase name="[It] [sig-network] Netpol NetworkPolicy between server and client should support a &#39;default-deny-ingress&#39; policy [Feature:NetworkPolicy]" classname="flock conformance" status="passed" time="12.5">
      <system-err>&gt; Enter [It] ...</system-err>
    </testcase>
    <testcase name="[It] [sig-network] Netpol NetworkPolicy between server and client should enforce policy based on Ports [Feature:NetworkPolicy]" classname="flock conformance" status="failed" time="30.25">
      <failure message="[FAILED] 2 of 81 probes were wrong&#xA;x/a -&gt; y/b" type="failed">[FAILED] ...</failure>
    </testcase>
    <testcase name="[It] [sig-network] DNS should provide DNS for the cluster [Conformance]" classname="flock conformance" status="skipped" time="0">
      <skipped message="skipped"></skipped>
    </testcase>
    <testcase name="[It] [sig-network] Networking Granular Checks: Services should function for pod-Service: http" classname="flock conformance" status="skipped" time="27">
      <skipped message="skipped - Requires at least 2 nodes (not -1)"></skipped>
    </testcase>
    <testcase name="[ReportAfterSuite] Kubernetes e2e suite report" classname="flock conformance" status="passed" time="0"></testcase>
  </testsuite>
</testsuites>`;

describe('parseJUnit', () => {
  it('reads every case: specs without the [It] prefix, suite nodes as suite', () => {
    const cases = parseJUnit(JUNIT);
    expect(cases.map((c) => [c.kind, c.status])).toEqual([
      ['suite', 'passed'],
      ['spec', 'passed'],
      ['spec', 'failed'],
      ['spec', 'skipped'],
      ['spec', 'skipped'],
      ['suite', 'passed'],
    ]);
    expect(cases[1]!.name).toBe(
      "[sig-network] Netpol NetworkPolicy between server and client should support a 'default-deny-ingress' policy [Feature:NetworkPolicy]",
    );
    expect(cases[2]!.seconds).toBe(30.25);
    expect(cases[2]!.message).toBe('[FAILED] 2 of 81 probes were wrong\nx/a -> y/b');
    // Filtered out: not run; skipped at run time: run, and not passed.
    expect(tally(ran(cases.filter((c) => c.kind === 'spec')))).toEqual({
      passed: 1,
      failed: 1,
      skipped: 1,
    });
  });

  it('unescapes XML entities', () => {
    expect(unescapeXml('&lt;a&gt; &amp;&quot;&apos;&#39;&#x41;')).toBe(`<a> &"''A`);
  });
});

describe('renderResults', () => {
  it('writes the summary, the evidence and one row per spec that ran, between the markers', () => {
    const specs = parseJUnit(JUNIT).filter((c) => c.kind === 'spec');
    const md = renderResults({
      date: new Date('2026-12-01T22:49:01.123Z'),
      versions: { kernel: '6.18' },
      nodes: 3,
      sctpEvidence: '$ modprobe sctp\nnot found',
      suites: [
        {
          name: 'netpol',
          about: 'the suite',
          seconds: 281,
          procs: 3,
          specs,
          skipped: [{ pattern: 'SCTP', reason: 'no SCTP' }],
        },
      ],
    });
    expect(md.startsWith(BEGIN)).toBe(true);
    expect(md.endsWith(END)).toBe(true);
    expect(md).toContain('Run of 2026-12-01T22:49:01Z on a lab of 3 real nodes.');
    expect(md).toContain(
      '| netpol | 2026-12-01T22:49:01Z, 3 nodes, flock ? | 3 | 1 | 2 | `SCTP`: no SCTP | 4 min 41 s | 3 |',
    );
    expect(md).toContain(
      'pod-Service: http | skipped - Requires at least 2 nodes (not -1) | 27.0 s |',
    );
    expect(md).toContain(
      'should enforce policy based on Ports [Feature:NetworkPolicy] | failed | 30.3 s |',
    );
    expect(md).not.toContain('DNS');
  });

  it("a run replaces its own suites' rows and keeps the section's other suites, each naming its run", () => {
    const specs = parseJUnit(JUNIT).filter((c) => c.kind === 'spec');
    const report = (day: string, name: string, flock: string): RunReport => ({
      date: new Date(`${day}T10:00:00Z`),
      versions: { flock },
      nodes: 2,
      suites: [{ name, about: `all of ${name}`, seconds: 60, procs: 1, specs, skipped: [] }],
    });
    const first = renderResults(report('2026-12-01', 'serial', 'aaa'));
    const second = renderResults(
      report('2026-12-02', 'parallel', 'bbb'),
      undefined,
      keptSuites(first),
    );
    expect(keptSuites(second).map((k) => k.name)).toEqual(['parallel', 'serial']);
    expect(second).toContain('| serial | 2026-12-01T10:00:00Z, 2 nodes, flock aaa | 3 |');
    expect(second).toContain('| parallel | 2026-12-02T10:00:00Z, 2 nodes, flock bbb | 3 |');
    expect(second).toContain('### serial: all of serial');
    const third = renderResults(
      report('2026-12-03', 'serial', 'ccc'),
      undefined,
      keptSuites(second),
    );
    expect(third).not.toContain('flock aaa');
    expect(third.match(/### serial:/g)).toHaveLength(1);
    expect(third.match(/### parallel:/g)).toHaveLength(1);
    expect(third).toContain('| parallel | 2026-12-02T10:00:00Z, 2 nodes, flock bbb | 3 |');
    // Each block keeps its own spec rows: as many as the suite ran.
    const block = keptSuites(third).find((k) => k.name === 'parallel')!.specs;
    expect(
      block.split('\n').filter((l) => l.startsWith('| ') && !/^\| (spec|---) /.test(l)),
    ).toHaveLength(ran(specs).length);
  });
});

describe('the ./dev test subset', () => {
  it('has one focus per feature, each matching its spec name and no UDP/SCTP variant', () => {
    expect(SUBSET.focus).toHaveLength(POLICY_SUBSET.length + CNI_SUBSET.length);
    for (const [i, { spec }] of POLICY_SUBSET.entries()) {
      const re = new RegExp(SUBSET.focus[i]!);
      expect(
        re.test(
          `[sig-network] Netpol NetworkPolicy between server and client ${spec} [Feature:NetworkPolicy]`,
        ) || re.test(`[sig-network] Netpol API ${spec}`),
      ).toBe(true);
    }
    // The HostPort spec is [LinuxOnly] too: the skip leaves it in.
    const hostPort = `[sig-network] HostPort ${CNI_SUBSET[0]!.spec} [LinuxOnly] [Conformance]`;
    expect(new RegExp(SUBSET.focus[POLICY_SUBSET.length]!).test(hostPort)).toBe(true);
    expect(SUBSET.skip.some((s) => new RegExp(s.pattern).test(hostPort))).toBe(false);
    expect(
      SUBSET.skip.some((s) =>
        new RegExp(s.pattern).test(
          '[sig-network] Netpol NetworkPolicy between server and client should enforce policy based on Ports [LinuxOnly]',
        ),
      ),
    ).toBe(true);
  });

  it('runs the cluster DNS [Conformance] spec as the dns suite does, not its GCE or other DNS specs', () => {
    const dnsFocus = SUBSET.focus.filter((f) => f.includes('DNS'));
    expect(dnsFocus).toHaveLength(1);
    for (const focus of [...dnsFocus, ...DNS.focus]) {
      const re = new RegExp(focus);
      expect(re.test('[sig-network] DNS should provide DNS for the cluster [Conformance]')).toBe(
        true,
      );
      for (const other of [
        '[sig-network] DNS should provide DNS for the cluster [Provider:GCE]',
        '[sig-network] DNS should provide DNS for services [Conformance]',
        '[sig-network] DNS should provide /etc/hosts entries for the cluster [Conformance]',
      ])
        expect(re.test(other), other).toBe(false);
    }
  });
});

describe('the admission-webhook spec', () => {
  it('the subset and the webhook suite pick that one spec, not the other AdmissionWebhook specs', () => {
    const spec =
      '[sig-api-machinery] AdmissionWebhook [Privileged:ClusterAdmin] should be able to deny pod and configmap creation [Conformance]';
    const focus = [...SUBSET.focus.filter((f) => f.includes('AdmissionWebhook')), ...WEBHOOK.focus];
    expect(focus).toHaveLength(2);
    for (const f of focus) {
      const re = new RegExp(f);
      expect(re.test(spec)).toBe(true);
      expect(
        re.test(
          '[sig-api-machinery] AdmissionWebhook [Privileged:ClusterAdmin] should be able to deny attaching pod [Conformance]',
        ),
      ).toBe(false);
    }
  });
});

describe('the certification run', () => {
  it('every [Conformance] spec runs in exactly one of its two suites, the [Serial] ones alone', () => {
    const matches = (suite: typeof CONFORMANCE, name: string) =>
      suite.focus.some((f) => new RegExp(f).test(name)) &&
      !suite.skip.some((s) => new RegExp(s.pattern).test(name));
    for (const name of [
      '[sig-network] Services should serve a basic endpoint from pods  [Conformance]',
      '[sig-apps] Daemon set [Serial] should rollback without unnecessary restarts [Conformance]',
      '[sig-scheduling] SchedulerPredicates [Serial] validates resource limits of pods that are allowed to run  [Conformance]',
    ]) {
      const serial = name.includes('[Serial]');
      expect([matches(CONFORMANCE, name), matches(CONFORMANCE_SERIAL, name)], name).toEqual([
        !serial,
        serial,
      ]);
    }
    expect(matches(CONFORMANCE, '[sig-network] Netpol should enforce policy')).toBe(false);
    expect(CONFORMANCE_SERIAL.procs).toBe(1);
    expect([CONFORMANCE.binary, CONFORMANCE_SERIAL.binary]).toEqual([
      E2E_ALL_BINARY,
      E2E_ALL_BINARY,
    ]);
  });
});

describe('the sig-network suite', () => {
  const runs = (name: string) =>
    SIG_NETWORK.focus.some((f) => new RegExp(f).test(name)) &&
    !SIG_NETWORK.skip.some((s) => new RegExp(s.pattern).test(name));
  it('runs the Services, DNS, Networking, lifecycle, HostPort, Proxy and EndpointSlice specs, slow ones too', () => {
    for (const name of [
      '[sig-network] Services should serve a basic endpoint from pods  [Conformance]',
      '[sig-network] Services should be able to up and down services [Slow]',
      '[sig-network] DNS should provide DNS for services  [Conformance]',
      '[sig-network] Networking Granular Checks: Pods should function for intra-pod communication: http [NodeConformance] [Conformance]',
      '[sig-network] Connectivity Pod Lifecycle should be able to connect from a Pod to a terminating Pod',
      '[sig-network] HostPort validates that there is no conflict between pods with same hostPort but different hostIP and protocol [LinuxOnly] [Conformance]',
      '[sig-network] Proxy version v1 should proxy through a service and a pod  [Conformance]',
      '[sig-network] EndpointSlice should support creating EndpointSlice API operations [Conformance]',
    ])
      expect(runs(name), name).toBe(true);
  });
  it('leaves out disruptive, serial, feature-gated, LoadBalancer and Internet specs, and other sig-network groups', () => {
    for (const name of [
      '[sig-network] Services should work after restarting kube-proxy [Disruptive]',
      '[sig-network] Services should be able to create a functioning NodePort service [Serial]',
      '[sig-network] Services [Feature:ServiceCIDRs] should create Services and serve on different Service CIDRs',
      '[sig-network] LoadBalancers should be able to change the type and ports of a TCP service [Slow]',
      '[sig-network] Networking should provide Internet connection for containers [Feature:Networking-IPv4]',
      '[sig-network] Netpol NetworkPolicy between server and client should support a default-deny-ingress policy',
      '[sig-network] Ingress API should support creating Ingress API operations [Conformance]',
    ])
      expect(runs(name), name).toBe(false);
    expect(SIG_NETWORK.binary).toBe(E2E_ALL_BINARY);
    expect(SIG_NETWORK.section).toBe('sig-network');
  });
});

describe('the LoadBalancer suites', () => {
  it('what the IPv6-first suite leaves out for IPv6 runs on the IPv4-first lab; only the cloud spec is skipped there', () => {
    const ipv4Only = LOADBALANCER.skip.filter((s) => !LOADBALANCER_IPV4.skip.includes(s));
    expect(ipv4Only.length).toBeGreaterThan(0);
    for (const s of ipv4Only) expect(s.reason).toContain('runs in `loadbalancer-ipv4`');
    expect(LOADBALANCER_IPV4.skip.map((s) => s.reason)).toEqual([
      expect.stringMatching(/^needs a cloud load balancer/),
    ]);
    expect(LOADBALANCER_IPV4).toMatchObject({ focus: LOADBALANCER.focus, primaryFamily: 'IPv4' });
    expect(LOADBALANCER_IPV4.section).not.toBe(LOADBALANCER.section);
  });
});

describe("the runners' install options", () => {
  it('flock as processes by default; --install helm with --set values; bad ones refused', () => {
    expect(installOptions([])).toEqual({});
    expect(installOptions(['--install', 'processes'])).toEqual({});
    expect(
      installOptions(['--install', 'helm', '--set', 'peerRelay.enabled=true', '--set', 'a.b[0]=x']),
    ).toEqual({ install: 'helm', helmValues: ['peerRelay.enabled=true', 'a.b[0]=x'] });
    expect(() => installOptions(['--install', 'docker'])).toThrow('processes or helm');
    expect(() => installOptions(['--set', 'peerRelay.enabled=true'])).toThrow(
      'need --install helm',
    );
    expect(() => installOptions(['--install', 'helm', '--set', 'x'])).toThrow('KEY=VALUE');
    expect(() => installOptions(['--install', 'helm', '--set', '--no-docs'])).toThrow('KEY=VALUE');
  });
});
