import { describe, expect, it } from 'vitest';
import { NftApplier } from './apply.js';
import { diffTables } from './diff.js';
import { FakeNftKernel } from '../testing/fake-kernel.js';
import { renderTable, tableScript } from './render.js';
import { parseState } from './state.js';
import { clusterPolicy, local, namespace, pod, policy, state } from '../testing/builders.js';
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

/** The chain a pod chain jumps to for a tier (`admin` or `baseline`). */
const tierOf = (t: ReturnType<typeof table>, pod: string, tier: string) => {
  const jump = chain(t, pod)?.find((l) => l.startsWith(`jump ${tier}_`));
  return jump ? chain(t, jump.slice(5)) : undefined;
};

describe('render: ClusterNetworkPolicy tiers', () => {
  it('the Admin tier comes before the NetworkPolicy rules, which end in drop', () => {
    const t = table([admin('adm', 1, [{ action: 'Deny', from: [red] }])], [npAllowR]);
    const lines = chain(t, 'ingress_fl-a');
    expect(lines?.[0]).toMatch(/^jump admin_ingress_[0-9a-f]{12}$/);
    expect(lines?.slice(1)).toEqual([
      'ip saddr @peers_1_v4 accept comment "x/allow-r ingress[0]"',
      'counter drop',
    ]);
    expect(tierOf(t, 'ingress_fl-a', 'admin')).toEqual([
      'ip saddr @peers_0_v4 drop comment "Admin adm ingress[0]"',
    ]);
  });

  it('an Admin Pass returns to the pod chain: on to the NetworkPolicy tier', () => {
    const t = table(
      [
        admin('adm', 1, [
          { action: 'Pass', from: [red] },
          { action: 'Accept', from: [{ namespaces: {} }] },
        ]),
      ],
      [npAllowR],
    );
    expect(tierOf(t, 'ingress_fl-a', 'admin')).toEqual([
      'ip saddr @peers_0_v4 return comment "Admin adm ingress[0]"',
      'ip saddr @peers_1_v4 accept comment "Admin adm ingress[1]"',
    ]);
  });

  it('without NetworkPolicy the Baseline tier follows, where Pass allows like Accept', () => {
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
    const lines = chain(t, 'ingress_fl-a');
    expect(lines?.map((l) => l.replace(/_[0-9a-f]{12}$/, ''))).toEqual([
      'jump admin_ingress',
      'jump baseline_ingress',
    ]);
    expect(tierOf(t, 'ingress_fl-a', 'baseline')).toEqual([
      'ip saddr @peers_1_v4 accept comment "Baseline base ingress[0]"',
      'ip saddr @peers_0_v4 drop comment "Baseline base ingress[1]"',
    ]);
    // A NetworkPolicy isolating the pod: the Baseline tier is not reached.
    const isolated = table([baseline([{ action: 'Deny', from: [red] }])], [npAllowR]);
    expect(tierOf(isolated, 'ingress_fl-a', 'baseline')).toBeUndefined();
  });

  it('egress: Accept goes to the destination’s ingress check, Deny drops', () => {
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
    expect(tierOf(t, 'egress_fl-a', 'admin')).toEqual([
      'ip daddr @peers_0_v4 meta l4proto . th dport @ports_0 goto egress_allowed comment "Admin adm egress[0]"',
      'ip daddr @peers_1_v4 drop comment "Admin adm egress[1]"',
    ]);
    expect(chain(t, 'egress_allowed')).toEqual(['oifname vmap @ingress_pods', 'accept']);
    expect(t.sets.find((s) => s.name === 'egress_pods')?.elements).toEqual([
      '"fl-a" : jump egress_fl-a',
    ]);
  });

  it('pods with the same tier rules share one tier chain', () => {
    const two = renderTable(
      translate(
        parseState(
          state({
            namespaces,
            pods: [...pods, pod('x/b', { app: 'b' }, ['10.0.0.2'])],
            clusterPolicies: [admin('adm', 1, [{ action: 'Deny', from: [red] }])],
            local: [...locals, local('x/b', 'fl-b')],
          }),
        ),
      ),
    );
    const a = chain(two, 'ingress_fl-a')?.[0];
    expect(a).toMatch(/^jump admin_ingress_/);
    expect(chain(two, 'ingress_fl-b')?.[0]).toBe(a);
    expect(two.chains.filter((c) => c.name.startsWith('admin_'))).toHaveLength(1);
  });
});

describe('diff: ClusterNetworkPolicy chains', () => {
  const pass = admin('adm', 1, [
    { action: 'Pass', from: [red] },
    { action: 'Deny', from: [red] },
  ]);
  const pass2 = admin('adm', 1, [{ action: 'Pass', from: [red] }]);
  // allow-r plus a rule without peers: the Pass chain changes, no set does.
  const npMore = policy('x/allow-r', {
    podSelector: {},
    ingress: [...(npAllowR.spec['ingress'] as unknown[]), {}],
  });

  it('re-makes pod chains whose tier chain changes (a new name), and the fake kernel takes it', async () => {
    const kernel = new FakeNftKernel();
    const applier = new NftApplier(kernel.run);
    const steps = [
      table([pass], [npAllowR]),
      table([pass], [npMore]), // only the pod chain changes
      table([pass2], [npMore]), // the Admin tier chain changes: a new one, the pod chain jumps there
      table([pass2]),
      table([]), // no policies at all
    ];
    for (const step of steps) {
      await applier.applyTable(step);
      expect(kernel.normalised()).toEqual(replaced(step));
    }
    expect(applier.counts.diff).toBeGreaterThan(0);
    const second = diffTables(steps[1]!, steps[2]!) ?? '';
    const old = steps[1]!.chains.find((c) => c.name.startsWith('admin_'))!.name;
    // The referring chain is deleted before the chain it jumps to.
    expect(second.indexOf('delete chain inet flock ingress_fl-a\n')).toBeGreaterThan(-1);
    expect(second.indexOf('delete chain inet flock ingress_fl-a\n')).toBeLessThan(
      second.indexOf(`delete chain inet flock ${old}`),
    );
  });

  it('the fake kernel refuses to delete a chain a rule still jumps to', () => {
    const kernel = new FakeNftKernel();
    const t = table([pass], [npAllowR]);
    kernel.execute(tableScript(t));
    const tier = t.chains.find((c) => c.name.startsWith('admin_'))!.name;
    expect(() => kernel.execute(`delete chain inet flock ${tier}\n`)).toThrow(/busy/);
  });
});

function replaced(t: ReturnType<typeof table>): unknown {
  const k = new FakeNftKernel();
  k.execute(tableScript(t));
  return k.normalised();
}
