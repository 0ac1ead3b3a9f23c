// ClusterNetworkPolicy Deny rules and peers this node does not know yet (unknown-peers.ts).
import { describe, expect, it } from 'vitest';
import { renderTable } from './render.js';
import { parseState } from './state.js';
import { clusterPolicy, local, namespace, pod, state } from '../testing/builders.js';
import { IncrementalTranslator, translate } from './translate.js';

const namespaces = [namespace('x'), namespace('y', { team: 'red' })];
const pods = [
  pod('x/a', { app: 'a' }, ['10.0.0.1', 'fd00::1'], [{ name: 'web', port: 8080 }]),
  pod('y/r', { app: 'r' }, ['10.0.1.1']),
];
const podRanges = ['10.0.0.0/16', 'fd00::/64'];
const red = { namespaces: { matchLabels: { team: 'red' } } };
const subject = { namespaces: { matchLabels: { 'kubernetes.io/metadata.name': 'x' } } };
const stateOf = (
  rules: { ingress?: unknown[]; egress?: unknown[] },
  ranges: string[] = podRanges,
  extra: unknown[] = [],
) =>
  parseState({
    ...state({
      namespaces,
      pods: [...pods, ...extra],
      clusterPolicies: [clusterPolicy('adm', 'Admin', 1, { subject, ...rules })],
      local: [local('x/a', 'fl-a')],
    }),
    podRanges: ranges,
  });
const table = (...args: Parameters<typeof stateOf>) => renderTable(translate(stateOf(...args)));

/** The lines of the tier chain the pod chain `ingress_fl-a` / `egress_fl-a` jumps to. */
function tier(t: ReturnType<typeof table>, direction: 'ingress' | 'egress'): string[] {
  const lines = (name: string) =>
    t.chains
      .find((c) => c.name === name)
      ?.lines.slice(2, -1)
      .map((l) => l.trim()) ?? [];
  const jump = lines(`${direction}_fl-a`).find((l) => l.startsWith('jump admin_'));
  return jump ? lines(jump.slice(5)) : [];
}
const elements = (t: ReturnType<typeof table>, name: string) =>
  t.sets.find((s) => s.name === name)?.elements;

describe('Deny rules and unknown peers', () => {
  it('a Deny by namespace also drops the pod ranges minus the live pods', () => {
    const t = table({ ingress: [{ action: 'Deny', from: [red] }] });
    expect(tier(t, 'ingress')).toEqual([
      'ip saddr @peers_0_v4 drop comment "Admin adm ingress[0]"',
      'ip saddr @peers_1_v4 ip saddr != @peers_2_v4 drop comment "Admin adm ingress[0] unknown peers"',
      'ip6 saddr @peers_1_v6 ip6 saddr != @peers_2_v6 drop comment "Admin adm ingress[0] unknown peers"',
    ]);
    expect(elements(t, 'peers_1_v4')).toEqual(['10.0.0.0/16']);
    expect(elements(t, 'peers_1_v6')).toEqual(['fd00::/64']);
    expect(elements(t, 'peers_2_v4')).toEqual(['10.0.0.1', '10.0.1.1']);
    expect(elements(t, 'peers_2_v6')).toEqual(['fd00::1']);
  });

  it('a Deny whose selectors match no pod still drops the unknown ones', () => {
    const nobody = { namespaces: { matchLabels: { team: 'none' } } };
    const t = table({ ingress: [{ action: 'Deny', from: [nobody] }] });
    expect(tier(t, 'ingress')).toEqual([
      'ip saddr @peers_0_v4 ip saddr != @peers_1_v4 drop comment "Admin adm ingress[0] unknown peers"',
      'ip6 saddr @peers_0_v6 ip6 saddr != @peers_1_v6 drop comment "Admin adm ingress[0] unknown peers"',
    ]);
  });

  it('no pod ranges, Accept and Pass, and Deny by networks or nodes: nothing more', () => {
    const deny = { ingress: [{ action: 'Deny', from: [red] }] };
    expect(tier(table(deny, []), 'ingress')).toEqual([
      'ip saddr @peers_0_v4 drop comment "Admin adm ingress[0]"',
    ]);
    const others = table({
      ingress: [
        { action: 'Accept', from: [red] },
        { action: 'Pass', from: [{ namespaces: {} }] },
      ],
      egress: [
        { action: 'Deny', to: [{ networks: ['192.0.2.0/24'] }] },
        { action: 'Deny', to: [{ nodes: { matchLabels: { role: 'x' } } }] },
      ],
    });
    expect(tier(others, 'ingress')).toHaveLength(3); // Accept (v4), Pass (v4, v6)
    expect(tier(others, 'egress')).toHaveLength(1); // the node peer selects no node
    expect([...tier(others, 'ingress'), ...tier(others, 'egress')].join('\n')).not.toMatch(
      /unknown/,
    );
  });

  it('the unknown ones are dropped on the rule ports; to named ports of an unknown pod, on any', () => {
    const tcp80 = [{ tcp: { destinationPort: { number: 80 } } }];
    const web = [{ destinationNamedPort: 'web' }];
    const t = table({
      ingress: [
        { action: 'Deny', from: [red], protocols: tcp80 },
        { action: 'Deny', from: [red], protocols: web },
        { action: 'Deny', from: [red], protocols: [{ destinationNamedPort: 'none' }] },
      ],
      egress: [{ action: 'Deny', to: [red], protocols: web }],
    });
    const unknown = (direction: 'ingress' | 'egress') =>
      tier(t, direction).filter((l) => l.includes('unknown') && l.startsWith('ip '));
    expect(unknown('ingress')).toEqual([
      'ip saddr @peers_1_v4 ip saddr != @peers_2_v4 meta l4proto . th dport @ports_0 drop comment "Admin adm ingress[0] unknown peers"',
      // x/a's own "web" (8080, on every protocol the name may carry); "none": no such port here.
      'ip saddr @peers_1_v4 ip saddr != @peers_2_v4 meta l4proto . th dport @ports_1 drop comment "Admin adm ingress[1] unknown peers"',
    ]);
    expect(unknown('egress')).toEqual([
      'ip daddr @peers_1_v4 ip daddr != @peers_2_v4 drop comment "Admin adm egress[0] unknown peers"',
    ]);
    expect(elements(t, 'ports_0')).toEqual(['tcp . 80']);
  });

  it('incrementally: a pod that becomes known joins the live pods; new ranges replace the old', () => {
    const rules = { ingress: [{ action: 'Deny', from: [red] }] };
    const inc = new IncrementalTranslator();
    const render = (s: ReturnType<typeof stateOf>) => renderTable(inc.translate(s));
    render(stateOf(rules));
    const newPod = pod('x/b', { app: 'b' }, ['10.0.0.2']);
    const joined = render(stateOf(rules, podRanges, [newPod]));
    expect(joined).toEqual(table(rules, podRanges, [newPod]));
    expect(elements(joined, 'peers_2_v4')).toEqual(['10.0.0.1-10.0.0.2', '10.0.1.1']);
    const moved = render(stateOf(rules, ['10.9.0.0/16'], [newPod]));
    expect(moved).toEqual(table(rules, ['10.9.0.0/16'], [newPod]));
    expect(elements(moved, 'peers_1_v4')).toEqual(['10.9.0.0/16']);
  });

  it('a pod that changes but stays a live pod with its addresses leaves the live pods’ set as it was', () => {
    const rules = { ingress: [{ action: 'Deny', from: [red] }] };
    const inc = new IncrementalTranslator();
    const livePods = (extra: unknown[]) =>
      inc
        .translate(stateOf(rules, podRanges, extra))
        .addressSets.find((x) => x.comment === 'live pods');
    const before = livePods([pod('x/b', { app: 'b' }, ['10.0.0.2'])]);
    // A label change (the kubelet's status changes are the same to policy): the same arrays,
    // so nothing was computed again from every pod and nothing is written to the kernel.
    const relabelled = livePods([pod('x/b', { app: 'b', v: '2' }, ['10.0.0.2'])]);
    expect(relabelled?.v4).toBe(before?.v4);
    // Its address changed, or it went: the set follows.
    expect(livePods([pod('x/b', { app: 'b', v: '2' }, ['10.0.0.3'])])?.v4).toEqual([
      '10.0.0.1',
      '10.0.0.3',
      '10.0.1.1',
    ]);
    expect(livePods([])?.v4).toEqual(['10.0.0.1', '10.0.1.1']);
  });

  it('refuses a pod range that is not a CIDR', () => {
    expect(() => stateOf({}, ['10.0.0.0/33'])).toThrow(/podRanges\[0\].*must be a CIDR/s);
  });
});
