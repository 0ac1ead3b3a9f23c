// ClusterNetworkPolicy tiers with real packets: Admin before NetworkPolicy, Baseline after it.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { requireKernelTier } from '@flock/testkit';
import { clusterPolicy, node, policy } from '../testing/builders.js';
import { PolicyLab, type Probe } from '../testing/lab.js';
import { NAMESPACE_LABELS, topology } from '../testing/topology.js';

const TCP80: Probe = { proto: 'tcp', port: 80, family: 4 };
const TCP80v6: Probe = { proto: 'tcp', port: 80, family: 6 };
const inNs = (name: string) => ({
  namespaces: { matchLabels: { 'kubernetes.io/metadata.name': name } },
});
const podPeer = (ns: string, name: string) => ({
  pods: {
    namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': ns } },
    podSelector: { matchLabels: { pod: name } },
  },
});
const npAllowAll = policy('x/allow-all', { podSelector: {}, ingress: [{}] });
const npAllowFrom = (ref: string) => {
  const [ns, name] = ref.split('/') as [string, string];
  return policy(`x/allow-${ns}-${name}`, {
    podSelector: { matchLabels: { pod: 'a' } },
    ingress: [
      {
        from: [
          {
            namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': ns } },
            podSelector: { matchLabels: { pod: name } },
          },
        ],
      },
    ],
  });
};

describe('ClusterNetworkPolicy tiers (kernel)', () => {
  let lab: PolicyLab;
  const some = new Set(['x/a', 'x/b', 'y/a', 'y/b', 'z/a', 'ext']);
  beforeAll(async () => {
    requireKernelTier('nft', 'sysctl');
    lab = await PolicyLab.create(
      NAMESPACE_LABELS,
      topology().filter((e) => some.has(e.ref)),
    );
  });
  afterAll(async () => {
    await lab?.destroy();
  });

  const reaches = async (from: string, to: string, p: Probe = TCP80) =>
    (await lab.probe(from, to, p, 700)).reply === to;

  it('Admin Deny overrides a NetworkPolicy that allows', async () => {
    await lab.apply([npAllowAll]);
    expect(await reaches('y/a', 'x/a')).toBe(true); // the test can see the allow
    await lab.apply([npAllowAll], {
      clusterPolicies: [
        clusterPolicy('deny-y', 'Admin', 10, {
          subject: inNs('x'),
          ingress: [{ action: 'Deny', from: [inNs('y')] }],
        }),
      ],
    });
    expect(await reaches('y/a', 'x/a')).toBe(false);
    expect(await reaches('y/a', 'x/a', TCP80v6)).toBe(false);
    expect(await reaches('z/a', 'x/a')).toBe(true);
  });

  it('Admin Pass defers to NetworkPolicy; later Admin rules are skipped for passed traffic', async () => {
    const cnp = clusterPolicy('pass-y', 'Admin', 10, {
      subject: inNs('x'),
      ingress: [
        { action: 'Pass', from: [inNs('y')] },
        { action: 'Deny', from: [{ namespaces: {} }] },
      ],
    });
    await lab.apply([npAllowFrom('y/a'), npAllowFrom('z/a')], { clusterPolicies: [cnp] });
    expect(await reaches('y/a', 'x/a')).toBe(true); // passed, NetworkPolicy allows
    expect(await reaches('y/b', 'x/a')).toBe(false); // passed, NetworkPolicy isolates x/a
    expect(await reaches('z/a', 'x/a')).toBe(false); // not passed: Admin Deny, despite the NP
    expect(await reaches('z/a', 'x/b')).toBe(false); // Admin Deny, no NetworkPolicy at all
    expect(await reaches('y/a', 'x/b')).toBe(true); // passed, no NP: default allow
  });

  it('priority orders Admin policies: the lower number wins', async () => {
    const accept = (priority: number) =>
      clusterPolicy('accept-y', 'Admin', priority, {
        subject: inNs('x'),
        ingress: [{ action: 'Accept', from: [inNs('y')] }],
      });
    const deny = clusterPolicy('deny-all', 'Admin', 50, {
      subject: inNs('x'),
      ingress: [{ action: 'Deny', from: [{ namespaces: {} }] }],
    });
    await lab.apply([], { clusterPolicies: [accept(10), deny] });
    expect(await reaches('y/a', 'x/a')).toBe(true);
    expect(await reaches('z/a', 'x/a')).toBe(false);
    await lab.apply([], { clusterPolicies: [accept(90), deny] });
    expect(await reaches('y/a', 'x/a')).toBe(false);
  });

  it('Admin Accept overrides a NetworkPolicy that isolates the pod', async () => {
    const isolate = policy('x/deny', { podSelector: {}, policyTypes: ['Ingress', 'Egress'] });
    await lab.apply([isolate]);
    expect(await reaches('y/a', 'x/a')).toBe(false);
    expect(await reaches('x/a', 'ext')).toBe(false);
    await lab.apply([isolate], {
      clusterPolicies: [
        clusterPolicy('accept', 'Admin', 1, {
          subject: { pods: { namespaceSelector: {}, podSelector: { matchLabels: { pod: 'a' } } } },
          ingress: [
            {
              action: 'Accept',
              from: [podPeer('y', 'a')],
              protocols: [{ tcp: { destinationPort: { number: 80 } } }],
            },
          ],
          egress: [{ action: 'Accept', to: [{ networks: ['203.0.113.0/24'] }] }],
        }),
      ],
    });
    expect(await reaches('y/a', 'x/a')).toBe(true);
    expect(await reaches('y/b', 'x/a')).toBe(false);
    expect(await reaches('x/a', 'ext')).toBe(true);
    expect(await reaches('x/b', 'ext')).toBe(false); // not a subject: the NP still isolates it
  });

  it('Baseline Deny applies only to pods no NetworkPolicy selects; Baseline Pass allows', async () => {
    const baseline = clusterPolicy('baseline', 'Baseline', 10, {
      subject: inNs('x'),
      ingress: [
        { action: 'Pass', from: [podPeer('z', 'a')] },
        { action: 'Deny', from: [{ namespaces: {} }] },
      ],
    });
    await lab.apply([npAllowFrom('y/a')], { clusterPolicies: [baseline] });
    expect(await reaches('y/a', 'x/a')).toBe(true); // NetworkPolicy decides for x/a
    expect(await reaches('y/a', 'x/b')).toBe(false); // x/b: no NP, Baseline Deny
    expect(await reaches('z/a', 'x/b')).toBe(true); // Baseline Pass: the default, allowed
  });

  it('a Deny by namespace drops pods of the pod ranges that are not known yet, both ways', async () => {
    // The lab's pods live in 10.1-3.0.0/16 and fd00:1-3::/32; z/a is wired but not in the state.
    const podRanges = ['10.0.0.0/8', 'fd00::/16'];
    const cnp = clusterPolicy('deny-y', 'Admin', 10, {
      subject: inNs('x'),
      ingress: [{ action: 'Deny', from: [inNs('y')] }],
      egress: [{ action: 'Deny', to: [inNs('y')] }],
    });
    // Without pod ranges an unknown pod is let through: the hole this closes.
    await lab.apply([], { clusterPolicies: [cnp], exclude: ['z/a'] });
    expect(await reaches('z/a', 'x/a')).toBe(true);
    await lab.apply([], { clusterPolicies: [cnp], exclude: ['z/a'], podRanges });
    expect(await reaches('z/a', 'x/a')).toBe(false);
    expect(await reaches('z/a', 'x/a', TCP80v6)).toBe(false);
    expect(await reaches('x/a', 'z/a')).toBe(false); // egress to it
    expect(await reaches('x/b', 'x/a')).toBe(true); // known, not denied
    expect(await reaches('ext', 'x/a')).toBe(true); // outside the pod ranges
    expect(await reaches('x/a', 'ext', TCP80v6)).toBe(true);
    expect(await reaches('y/a', 'x/a')).toBe(false); // the Deny itself
    // Known (in namespace z): let through.
    await lab.apply([], { clusterPolicies: [cnp], podRanges });
    expect(await reaches('z/a', 'x/a')).toBe(true);
    expect(await reaches('x/a', 'z/a', TCP80v6)).toBe(true);
  });

  it('nodes peers match the addresses in Node status', async () => {
    // A "node" whose InternalIP is the external host's address.
    const nodes = [node('n1', { role: 'infra' }, ['203.0.113.10', '2001:db8:e::10'])];
    const cnp = clusterPolicy('no-infra', 'Admin', 1, {
      subject: inNs('x'),
      egress: [{ action: 'Deny', to: [{ nodes: { matchLabels: { role: 'infra' } } }] }],
    });
    await lab.apply([], { clusterPolicies: [cnp], nodes });
    expect(await reaches('x/a', 'ext')).toBe(false);
    expect(await reaches('x/a', 'ext', TCP80v6)).toBe(false);
    expect(await reaches('x/a', 'y/a')).toBe(true);
    await lab.apply([], {
      clusterPolicies: [cnp],
      nodes: [node('n1', { role: 'x' }, ['203.0.113.10'])],
    });
    expect(await reaches('x/a', 'ext')).toBe(true);
  });

  it('a diff that changes the NetworkPolicy tier behind an Admin Pass is taken by the real nft', async () => {
    const pass = clusterPolicy('pass-y', 'Admin', 10, {
      subject: inNs('x'),
      ingress: [
        { action: 'Pass', from: [inNs('y')] },
        { action: 'Deny', from: [inNs('z')] },
      ],
    });
    const more = policy('x/allow-y-a', {
      podSelector: { matchLabels: { pod: 'a' } },
      ingress: [...(npAllowFrom('y/a').spec['ingress'] as unknown[]), {}],
    });
    lab.applier.forget();
    await lab.applyTable([npAllowFrom('y/a')], { clusterPolicies: [pass] });
    expect(await reaches('y/b', 'x/a')).toBe(false);
    const before = { ...lab.applier.counts };
    await lab.applyTable([more], { clusterPolicies: [pass] });
    expect(lab.applier.counts.diff).toBe(before.diff + 1);
    expect(lab.applier.counts.replace).toBe(before.replace);
    expect(await reaches('y/b', 'x/a')).toBe(true); // the new NP rule, after the Pass
    expect(await reaches('z/a', 'x/a')).toBe(false); // the Admin Deny still holds
    // The Admin tier changes (same sets): a new tier chain, the old one deleted after the pod
    // chain that jumped to it — one diff the kernel takes.
    const accept = clusterPolicy('pass-y', 'Admin', 10, {
      subject: inNs('x'),
      ingress: [
        { action: 'Pass', from: [inNs('y')] },
        { action: 'Accept', from: [inNs('z')] },
      ],
    });
    const mid = { ...lab.applier.counts };
    await lab.applyTable([more], { clusterPolicies: [accept] });
    expect(lab.applier.counts.diff).toBe(mid.diff + 1);
    expect(lab.applier.counts.replace).toBe(mid.replace);
    expect(await reaches('z/a', 'x/a')).toBe(true);
  });
});
