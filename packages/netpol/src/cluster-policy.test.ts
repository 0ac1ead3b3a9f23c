import { describe, expect, it } from 'vitest';
import type { RuleIR } from './ir.js';
import { clusterPolicy, node, policy } from '../testing/builders.js';
import { peers, podOf, ports, tr } from '../testing/translate-fixture.js';
import { parseState } from './state.js';

const ns = (labels: Record<string, string>) => ({ namespaces: { matchLabels: labels } });
const toX = { subject: ns({ 'kubernetes.io/metadata.name': 'x' }) };
const actions = (rules: RuleIR[] | undefined) => rules?.map((r) => [r.comment, r.action]);
const fromRed = { namespaces: { matchLabels: { team: 'red' } } };

describe('ClusterNetworkPolicy: tiers and order', () => {
  it('orders Admin policies by priority, ties by name, rules as written', () => {
    const ir = tr([], {
      clusterPolicies: [
        clusterPolicy('late', 'Admin', 20, {
          ...toX,
          ingress: [{ action: 'Deny', from: [fromRed] }],
        }),
        clusterPolicy('b-tie', 'Admin', 10, {
          ...toX,
          ingress: [{ action: 'Accept', from: [fromRed] }],
        }),
        clusterPolicy('a-tie', 'Admin', 10, {
          ...toX,
          ingress: [
            { name: 'first', action: 'Pass', from: [fromRed] },
            { action: 'Deny', from: [fromRed] },
          ],
        }),
      ],
    });
    const ingress = podOf(ir, 'x/a').ingress;
    expect(ingress?.admin?.policies).toEqual(['a-tie', 'b-tie', 'late']);
    expect(actions(ingress?.admin?.rules)).toEqual([
      ['Admin a-tie ingress[0] first', 'pass'],
      ['Admin a-tie ingress[1]', 'deny'],
      ['Admin b-tie ingress[0]', 'accept'],
      ['Admin late ingress[0]', 'deny'],
    ]);
    // Not isolated by a NetworkPolicy: the pod is not isolated for NetworkPolicy's tier.
    expect(ingress?.policies).toEqual([]);
    // A pod of another namespace is not selected.
    expect(podOf(ir, 'y/a').ingress).toBeUndefined();
  });

  it('Baseline rules apply only to pods no NetworkPolicy isolates', () => {
    const baseline = clusterPolicy('base', 'Baseline', 1, {
      subject: { namespaces: {} },
      ingress: [{ action: 'Deny', from: [{ namespaces: {} }] }],
    });
    const np = policy('x/np', { podSelector: { matchLabels: { app: 'a' } }, ingress: [{}] });
    const ir = tr([np], { clusterPolicies: [baseline] });
    // x/a: its NetworkPolicy decides; the Baseline tier is never reached.
    expect(podOf(ir, 'x/a').ingress).toEqual({
      policies: ['x/np'],
      rules: [{ kind: 'allow', comment: 'x/np ingress[0]' }],
    });
    // x/b and y/a: no NetworkPolicy, so the Baseline tier decides.
    for (const ref of ['x/b', 'y/a']) {
      const ingress = podOf(ir, ref).ingress;
      expect(ingress?.policies).toEqual([]);
      expect(actions(ingress?.baseline?.rules)).toEqual([['Baseline base ingress[0]', 'deny']]);
    }
    // No egress rules: egress is not affected.
    expect(podOf(ir, 'x/b').egress).toBeUndefined();
  });

  it('both tiers and NetworkPolicy combine on one pod', () => {
    const ir = tr([policy('x/np', { podSelector: {}, policyTypes: ['Egress'] })], {
      clusterPolicies: [
        clusterPolicy('adm', 'Admin', 5, {
          ...toX,
          egress: [{ action: 'Pass', to: [{ networks: ['0.0.0.0/0'] }] }],
        }),
        clusterPolicy('base', 'Baseline', 5, {
          ...toX,
          egress: [{ action: 'Accept', to: [{ networks: ['0.0.0.0/0'] }] }],
        }),
      ],
    });
    const egress = podOf(ir, 'x/a').egress;
    expect(egress?.admin?.policies).toEqual(['adm']);
    expect(egress?.policies).toEqual(['x/np']);
    expect(egress?.baseline).toBeUndefined();
  });
});

describe('ClusterNetworkPolicy: subjects and peers', () => {
  const one = (spec: Record<string, unknown>, extra: Record<string, unknown[]> = {}) =>
    tr([], { clusterPolicies: [clusterPolicy('p', 'Admin', 1, spec)], ...extra });

  it('a pods subject needs the namespace and the pod labels to match', () => {
    const ir = one({
      subject: {
        pods: {
          namespaceSelector: { matchLabels: { team: 'blue' } },
          podSelector: { matchLabels: { app: 'b' } },
        },
      },
      ingress: [{ action: 'Deny', from: [fromRed] }],
    });
    expect(podOf(ir, 'x/b').ingress?.admin?.policies).toEqual(['p']);
    expect(podOf(ir, 'x/a').ingress).toBeUndefined();
    expect(podOf(ir, 'y/a').ingress).toBeUndefined();
  });

  it('namespaces and pods peers select pods cluster-wide, by namespace labels', () => {
    const ir = one({
      ...toX,
      ingress: [
        {
          action: 'Accept',
          from: [
            fromRed,
            { pods: { namespaceSelector: {}, podSelector: { matchLabels: { app: 'c' } } } },
          ],
        },
      ],
    });
    const rule = podOf(ir, 'x/a').ingress?.admin?.rules[0];
    expect(rule?.kind === 'allow' && peers(ir, rule.peers)).toEqual({
      v4: ['10.0.2.1', '10.0.3.1'],
      v6: ['fd00::2:1'],
    });
  });

  it('networks and nodes peers (egress): CIDRs and the nodes’ status addresses', () => {
    const ir = one(
      {
        ...toX,
        egress: [
          {
            action: 'Deny',
            to: [
              { networks: ['192.0.2.0/24', '2001:db8::/32'] },
              { nodes: { matchLabels: { role: 'infra' } } },
            ],
          },
        ],
      },
      {
        nodes: [
          node('n1', { role: 'infra' }, ['10.200.0.1', 'fd00:200::1']),
          node('n2', { role: 'worker' }, ['10.200.0.2']),
        ],
      },
    );
    const rule = podOf(ir, 'x/a').egress?.admin?.rules[0];
    expect(rule?.kind === 'allow' && peers(ir, rule.peers)).toEqual({
      v4: ['10.200.0.1', '192.0.2.0/24'],
      v6: ['2001:db8::/32', 'fd00:200::1'],
    });
  });

  it('a nodes peer that selects no node matches nothing (the rule is left out)', () => {
    const ir = one({
      ...toX,
      egress: [{ action: 'Deny', to: [{ nodes: { matchLabels: { role: 'none' } } }] }],
    });
    expect(podOf(ir, 'x/a').egress?.admin?.rules).toEqual([]);
  });

  it('domainNames cannot be enforced: such a peer matches nothing', () => {
    const ir = one({
      ...toX,
      egress: [{ action: 'Accept', to: [{ domainNames: ['example.com'] }] }],
    });
    expect(podOf(ir, 'x/a').egress?.admin?.rules).toEqual([]);
  });

  it('protocols: numbers, ranges, and named ports in any protocol', () => {
    const ir = one({
      ...toX,
      ingress: [
        {
          action: 'Deny',
          from: [fromRed],
          protocols: [
            { tcp: { destinationPort: { number: 443 } } },
            { udp: { destinationPort: { range: { start: 1000, end: 2000 } } } },
            { destinationNamedPort: 'dns' },
          ],
        },
      ],
    });
    const rule = podOf(ir, 'x/a').ingress?.admin?.rules[0];
    // x/a declares dns as 53/UDP.
    expect(rule?.kind === 'allow' && ports(ir, rule.ports)).toMatchObject({
      elements: ['tcp . 443', 'udp . 53', 'udp . 1000-2000'],
      interval: true,
    });
  });

  it('egress to a named port resolves it per destination pod', () => {
    const ir = one({
      ...toX,
      egress: [
        {
          action: 'Accept',
          to: [{ namespaces: {} }],
          protocols: [{ destinationNamedPort: 'http' }],
        },
      ],
    });
    const rule = podOf(ir, 'x/a').egress?.admin?.rules[0];
    expect(rule?.kind).toBe('tuples');
    const set = ir.tupleSets.find((t) => rule?.kind === 'tuples' && t.name === rule.tuples);
    expect(set?.v4).toEqual([
      '10.0.1.1 . tcp . 8080',
      '10.0.1.2 . tcp . 9090',
      '10.0.3.1 . tcp . 80',
    ]);
  });
});

describe('ClusterNetworkPolicy: input', () => {
  it('refuses fields it does not know, naming the object and field', () => {
    expect(() =>
      parseState({
        clusterPolicies: [
          clusterPolicy('bad', 'Admin', 1, {
            subject: { namespaces: {} },
            ingress: [{ action: 'Deny', from: [{ namespaces: {} }], mystery: true }],
          }),
        ],
      }),
    ).toThrow(/clusternetworkpolicy bad: spec\.ingress\[0\]/);
  });

  it('refuses a tier, an action or a priority outside the API', () => {
    for (const spec of [
      { tier: 'Developer', priority: 1 },
      { tier: 'Admin', priority: 1001 },
    ]) {
      expect(() =>
        parseState({
          clusterPolicies: [
            { metadata: { name: 'p' }, spec: { subject: { namespaces: {} }, ...spec } },
          ],
        }),
      ).toThrow(/clusternetworkpolicy p/);
    }
    expect(() =>
      parseState({
        clusterPolicies: [
          clusterPolicy('p', 'Admin', 1, {
            subject: { namespaces: {} },
            egress: [{ action: 'Allow', to: [{ namespaces: {} }] }],
          }),
        ],
      }),
    ).toThrow(/action/);
  });

  it('refuses two policies with one name', () => {
    const p = clusterPolicy('p', 'Admin', 1, { subject: { namespaces: {} } });
    expect(() => tr([], { clusterPolicies: [p, p] })).toThrow(/listed twice/);
  });
});
