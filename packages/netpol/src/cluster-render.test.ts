import { describe, expect, it } from 'vitest';
import { NftApplier } from './apply.js';
import { diffTables } from './diff.js';
import { FakeNftKernel } from './fake-kernel.js';
import { renderTable, tableScript } from './render.js';
import { parseState } from './state.js';
import { clusterPolicy, local, namespace, pod, policy, state } from './testing/builders.js';
import { translate } from './translate.js';

const namespaces = [namespace('x'), namespace('y', { team: 'red' })];
const pods = [
  pod('x/a', { app: 'a' }, ['10.0.0.1']),
  pod('y/r', { app: 'r' }, ['10.0.1.1']),
  pod('y/s', { app: 's' }, ['10.0.1.2']),
];
const locals = [local('x/a', 'fl-a')];
const table = (clusterPolicies: unknown[], policies: unknown[] = [], extraPods: unknown[] = []) =>
  renderTable(
    translate(
      parseState(
        state({
          namespaces,
          pods: [...pods, ...extraPods],
          policies,
          clusterPolicies,
          local: locals,
        }),
      ),
    ),
  );
const chain = (t: ReturnType<typeof table>, name: string) =>
  t.chains
    .find((c) => c.name === name)
    ?.lines.slice(2, -1)
    .map((l) => l.trim());

const red = { namespaces: { matchLabels: { team: 'red' } } };
const subject = { namespaces: { matchLabels: { 'kubernetes.io/metadata.name': 'x' } } };
const admin = (name: string, priority: number, ingress: unknown[]) =>
  clusterPolicy(name, 'Admin', priority, { subject, ingress });
const baseline = (ingress: unknown[], egress: unknown[] = []) =>
  clusterPolicy('base', 'Baseline', 1, { subject, ingress, egress });
const npAllowR = policy('x/allow-r', {
  podSelector: {},
  ingress: [{ from: [{ namespaceSelector: {}, podSelector: { matchLabels: { app: 'r' } } }] }],
});

describe('render: ClusterNetworkPolicy tiers', () => {
  it('Admin Accept and Deny come before the NetworkPolicy rules, which end in drop', () => {
    const t = table([admin('adm', 1, [{ action: 'Deny', from: [red] }])], [npAllowR]);
    expect(chain(t, 'ingress_fl-a')).toEqual([
      'ip saddr @peers_0_v4 drop comment "Admin adm ingress[0]"',
      'ip saddr @peers_1_v4 accept comment "x/allow-r ingress[0]"',
      'counter drop',
    ]);
  });

  it('an Admin Pass goes to a chain of its own holding the NetworkPolicy tier', () => {
    const t = table(
      [
        admin('adm', 1, [
          { action: 'Pass', from: [red] },
          { action: 'Deny', from: [{ namespaces: {} }] },
        ]),
      ],
      [npAllowR],
    );
    expect(chain(t, 'ingress_fl-a')).toEqual([
      'ip saddr @peers_0_v4 goto ingress_fl-a_pass comment "Admin adm ingress[0]"',
      'ip saddr @peers_1_v4 drop comment "Admin adm ingress[1]"',
      'goto ingress_fl-a_pass',
    ]);
    expect(chain(t, 'ingress_fl-a_pass')).toEqual([
      'ip saddr @peers_2_v4 accept comment "x/allow-r ingress[0]"',
      'counter drop',
    ]);
  });

  it('without NetworkPolicy an Admin Pass reaches the Baseline tier, where Pass allows', () => {
    const t = table([
      admin('adm', 1, [{ action: 'Pass', from: [red] }]),
      baseline([
        {
          action: 'Pass',
          from: [{ pods: { namespaceSelector: {}, podSelector: { matchLabels: { app: 'r' } } } }],
        },
        { action: 'Deny', from: [red] },
      ]),
    ]);
    expect(chain(t, 'ingress_fl-a_pass')).toEqual([
      'ip saddr @peers_1_v4 accept comment "Baseline base ingress[0]"',
      'ip saddr @peers_0_v4 drop comment "Baseline base ingress[1]"',
    ]);
  });

  it('a Pass with nothing after it allows, without a second chain', () => {
    const t = table([admin('adm', 1, [{ action: 'Pass', from: [red] }])]);
    expect(chain(t, 'ingress_fl-a')).toEqual([
      'ip saddr @peers_0_v4 accept comment "Admin adm ingress[0]"',
    ]);
    expect(chain(t, 'ingress_fl-a_pass')).toBeUndefined();
  });

  it('egress: Accept returns to the base chain (the destination’s ingress still applies)', () => {
    const t = table([
      clusterPolicy('adm', 'Admin', 1, {
        subject,
        egress: [
          {
            action: 'Accept',
            to: [{ networks: ['192.0.2.0/24'] }],
            protocols: [{ tcp: { destinationPort: { number: 443 } } }],
          },
          { action: 'Deny', to: [{ networks: ['0.0.0.0/0'] }] },
        ],
      }),
    ]);
    expect(chain(t, 'egress_fl-a')).toEqual([
      'ip daddr @peers_0_v4 meta l4proto . th dport @ports_0 return comment "Admin adm egress[0]"',
      'ip daddr @peers_1_v4 drop comment "Admin adm egress[1]"',
    ]);
    expect(t.sets.find((s) => s.name === 'egress_pods')?.elements).toEqual([
      '"fl-a" : jump egress_fl-a',
    ]);
  });
});

describe('diff: ClusterNetworkPolicy chains', () => {
  const pass = admin('adm', 1, [
    { action: 'Pass', from: [red] },
    { action: 'Deny', from: [red] },
  ]);
  // allow-r plus a rule without peers: the Pass chain changes, no set does.
  const npMore = policy('x/allow-r', {
    podSelector: {},
    ingress: [...(npAllowR.spec['ingress'] as unknown[]), {}],
  });

  it('re-makes the pod chain when only its Pass chain changes, and the fake kernel takes it', async () => {
    const kernel = new FakeNftKernel();
    const applier = new NftApplier(kernel.run);
    const steps = [
      table([pass], [npAllowR]),
      table([pass], [npMore]), // only ingress_fl-a_pass changes
      table([pass]), // the Pass chain goes: nothing after the Admin tier
      table([pass], [npAllowR]), // and comes back
      table([]), // no policies at all
    ];
    for (const step of steps) {
      await applier.applyTable(step);
      expect(kernel.normalised()).toEqual(replaced(step));
    }
    expect(applier.counts.diff).toBeGreaterThan(0);
    const first = diffTables(steps[0]!, steps[1]!) ?? '';
    // The referring chain is deleted before the chain it goes to.
    expect(first.indexOf('delete chain inet flock ingress_fl-a\n')).toBeGreaterThan(-1);
    expect(first.indexOf('delete chain inet flock ingress_fl-a\n')).toBeLessThan(
      first.indexOf('delete chain inet flock ingress_fl-a_pass'),
    );
  });

  it('the fake kernel refuses to delete a chain a rule still goes to', () => {
    const kernel = new FakeNftKernel();
    kernel.execute(tableScript(table([pass], [npAllowR])));
    expect(() => kernel.execute('delete chain inet flock ingress_fl-a_pass\n')).toThrow(/busy/);
  });
});

function replaced(t: ReturnType<typeof table>): unknown {
  const k = new FakeNftKernel();
  k.execute(tableScript(t));
  return k.normalised();
}
