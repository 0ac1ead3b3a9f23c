import { describe, expect, it } from 'vitest';
import { local, pod, policy } from '../testing/builders.js';
import { allow, podOf, ports, tr } from '../testing/translate-fixture.js';

describe('translate: which pods are isolated', () => {
  it('isolates no pod without policies', () => {
    const ir = tr([]);
    expect(ir.pods.map((p) => [p.pod, p.ingress, p.egress])).toEqual([
      ['x/a', undefined, undefined],
      ['x/b', undefined, undefined],
      ['y/a', undefined, undefined],
    ]);
  });

  it('an empty podSelector selects every pod of the policy namespace only', () => {
    const ir = tr([policy('x/deny', { podSelector: {} })]);
    expect(podOf(ir, 'x/a').ingress).toEqual({ policies: ['x/deny'], rules: [] });
    expect(podOf(ir, 'x/b').ingress).toEqual({ policies: ['x/deny'], rules: [] });
    expect(podOf(ir, 'y/a').ingress).toBeUndefined();
  });

  it('matchLabels selects only matching pods', () => {
    const ir = tr([policy('x/p', { podSelector: { matchLabels: { app: 'b' } } })]);
    expect(podOf(ir, 'x/a').ingress).toBeUndefined();
    expect(podOf(ir, 'x/b').ingress?.policies).toEqual(['x/p']);
  });

  it('matchExpressions select with In, NotIn, Exists and DoesNotExist', () => {
    const sel = (operator: string, values?: string[]) =>
      policy(`x/${operator.toLowerCase()}`, {
        podSelector: {
          matchExpressions: [{ key: 'tier', operator, ...(values ? { values } : {}) }],
        },
      });
    const ir = tr([sel('In', ['db']), sel('NotIn', ['db']), sel('Exists'), sel('DoesNotExist')]);
    expect(podOf(ir, 'x/a').ingress?.policies).toEqual(['x/doesnotexist', 'x/notin']);
    expect(podOf(ir, 'x/b').ingress?.policies).toEqual(['x/exists', 'x/in']);
  });

  it('policyTypes default to Ingress when the policy has no egress rules', () => {
    const ir = tr([policy('x/p', { podSelector: {}, ingress: [{}] })]);
    expect(podOf(ir, 'x/a').ingress).toBeDefined();
    expect(podOf(ir, 'x/a').egress).toBeUndefined();
  });

  it('policyTypes default to Ingress and Egress when egress rules exist', () => {
    const ir = tr([policy('x/p', { podSelector: {}, egress: [{}] })]);
    expect(podOf(ir, 'x/a').ingress).toEqual({ policies: ['x/p'], rules: [] });
    expect(podOf(ir, 'x/a').egress?.rules).toHaveLength(1);
  });

  it('an empty egress list does not make the default include Egress', () => {
    const ir = tr([policy('x/p', { podSelector: {}, egress: [] })]);
    expect(podOf(ir, 'x/a').egress).toBeUndefined();
  });

  it('explicit policyTypes Egress isolates egress only and ignores ingress rules', () => {
    const ir = tr([policy('x/p', { podSelector: {}, policyTypes: ['Egress'], ingress: [{}] })]);
    expect(podOf(ir, 'x/a').ingress).toBeUndefined();
    expect(podOf(ir, 'x/a').egress).toEqual({ policies: ['x/p'], rules: [] });
  });

  it('an empty policyTypes list is treated as absent', () => {
    const ir = tr([policy('x/p', { podSelector: {}, policyTypes: [] })]);
    expect(podOf(ir, 'x/a').ingress?.rules).toEqual([]);
  });

  it('several policies selecting one pod add up (union of their rules)', () => {
    const ir = tr([
      policy('x/one', { podSelector: {}, ingress: [{ ports: [{ port: 80 }] }] }),
      policy('x/two', {
        podSelector: { matchLabels: { app: 'a' } },
        ingress: [{ ports: [{ port: 81 }] }],
      }),
    ]);
    const a = podOf(ir, 'x/a').ingress;
    expect(a?.policies).toEqual(['x/one', 'x/two']);
    expect(a?.rules.map((r) => ports(ir, allow(r)?.ports)?.elements)).toEqual([
      ['tcp . 80'],
      ['tcp . 81'],
    ]);
    expect(podOf(ir, 'x/b').ingress?.rules).toHaveLength(1);
  });
});

describe('translate: local pods', () => {
  it('pods come out sorted by interface whatever the input order', () => {
    const ir = tr([], {
      local: [local('y/a', 'fl-c'), local('x/a', 'fl-a'), local('x/b', 'fl-b')],
    });
    expect(ir.pods.map((p) => p.interface)).toEqual(['fl-a', 'fl-b', 'fl-c']);
  });

  it('a pod may send from its pod IPs and from the anycast addresses the agent gives', () => {
    const ir = tr([], { local: [local('x/a', 'fl-a', ['192.0.2.10', '2001:db8::a'])] });
    expect(podOf(ir, 'x/a').sources).toEqual({
      v4: ['10.0.1.1', '192.0.2.10'],
      v6: ['2001:db8::a', 'fd00::1:1'],
    });
  });

  it('without anycast from the agent, the pod anycast annotation is read', () => {
    const p = pod('z/any', {}, ['10.0.3.5']);
    (p.metadata as Record<string, unknown>)['annotations'] = {
      'flock.fritzlab.net/anycast': '192.0.2.1',
    };
    const ir = tr([], { pods: [p], local: [local('z/any', 'fl-any')] });
    expect(podOf(ir, 'z/any').sources.v4).toEqual(['10.0.3.5', '192.0.2.1']);
  });

  it('a single-stack pod has no addresses of the other family', () => {
    const ir = tr([], { local: [local('z/c', 'fl-c')] });
    expect(podOf(ir, 'z/c').sources).toEqual({ v4: ['10.0.3.1'], v6: [] });
  });
});
