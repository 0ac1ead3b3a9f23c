import { describe, expect, it } from 'vitest';
import { NetpolError } from './errors.js';
import { parseState } from './state.js';
import { local, namespace, pod, policy, state } from '../testing/builders.js';
import { translate } from './translate.js';

const base = {
  namespaces: [namespace('x')],
  pods: [pod('x/a', { app: 'a' }, ['10.0.0.1'])],
};

function errorOf(fn: () => unknown): NetpolError {
  try {
    fn();
  } catch (e) {
    if (e instanceof NetpolError) return e;
    throw e;
  }
  throw new Error('expected a NetpolError');
}
const parseError = (raw: unknown) => errorOf(() => parseState(raw));
const withPolicy = (spec: Record<string, unknown>) =>
  state({ ...base, policies: [policy('x/bad', spec)] });

describe('parseState: errors name the object and the field', () => {
  it('ipBlock combined with a selector', () => {
    const e = parseError(
      withPolicy({
        podSelector: {},
        ingress: [{ from: [{ ipBlock: { cidr: '10.0.0.0/8' }, podSelector: {} }] }],
      }),
    );
    expect(e.issues[0]).toMatchObject({
      object: 'networkpolicy x/bad',
      field: 'spec.ingress[0].from[0]',
    });
    expect(e.message).toContain('ipBlock cannot be combined');
  });

  it('an except outside its cidr', () => {
    const e = parseError(
      withPolicy({
        podSelector: {},
        egress: [{ to: [{ ipBlock: { cidr: '10.0.0.0/16', except: ['10.1.0.0/24'] } }] }],
      }),
    );
    expect(e.message).toBe(
      'networkpolicy x/bad: spec.egress[0].to[0].ipBlock.except[0]: "10.1.0.0/24" must be a CIDR inside 10.0.0.0/16',
    );
  });

  it('an except of the other family', () => {
    const e = parseError(
      withPolicy({
        podSelector: {},
        egress: [{ to: [{ ipBlock: { cidr: '10.0.0.0/16', except: ['fd00::/64'] } }] }],
      }),
    );
    expect(e.issues[0]?.field).toBe('spec.egress[0].to[0].ipBlock.except[0]');
  });

  it('a cidr that is not one', () => {
    const e = parseError(
      withPolicy({ podSelector: {}, ingress: [{ from: [{ ipBlock: { cidr: '10.0.0.0' } }] }] }),
    );
    expect(e.issues[0]?.field).toBe('spec.ingress[0].from[0].ipBlock.cidr');
  });

  it('endPort with a named port', () => {
    const e = parseError(
      withPolicy({ podSelector: {}, ingress: [{ ports: [{ port: 'http', endPort: 90 }] }] }),
    );
    expect(e.message).toBe(
      'networkpolicy x/bad: spec.ingress[0].ports[0].endPort: endPort needs a numeric port',
    );
  });

  it('endPort below port', () => {
    const e = parseError(
      withPolicy({ podSelector: {}, ingress: [{ ports: [{ port: 90, endPort: 80 }] }] }),
    );
    expect(e.issues[0]?.field).toBe('spec.ingress[0].ports[0].endPort');
  });

  it('a port string that is not a port name', () => {
    const e = parseError(withPolicy({ podSelector: {}, ingress: [{ ports: [{ port: '80' }] }] }));
    expect(e.issues[0]?.field).toBe('spec.ingress[0].ports[0].port');
  });

  it('an unknown protocol', () => {
    const e = parseError(
      withPolicy({ podSelector: {}, ingress: [{ ports: [{ port: 80, protocol: 'ICMP' }] }] }),
    );
    expect(e.issues[0]?.field).toBe('spec.ingress[0].ports[0].protocol');
  });

  it('an empty peer', () => {
    const e = parseError(withPolicy({ podSelector: {}, ingress: [{ from: [{}] }] }));
    expect(e.message).toContain(
      'spec.ingress[0].from[0]: a peer needs podSelector, namespaceSelector or ipBlock',
    );
  });

  it('a field flock does not know is refused, never ignored', () => {
    const e = parseError(
      withPolicy({
        podSelector: {},
        ingress: [{ from: [{ podSelector: {}, serviceAccountSelector: {} }] }],
      }),
    );
    expect(e.issues[0]).toMatchObject({
      object: 'networkpolicy x/bad',
      field: 'spec.ingress[0].from[0]',
    });
  });

  it('a policy without podSelector', () => {
    expect(parseError(withPolicy({ ingress: [] })).issues[0]?.field).toBe('spec.podSelector');
  });

  it('an unknown policy type', () => {
    expect(
      parseError(withPolicy({ podSelector: {}, policyTypes: ['Sideways'] })).issues[0]?.field,
    ).toBe('spec.policyTypes[0]');
  });

  it('a pod IP that is not an address', () => {
    const e = parseError(
      state({ namespaces: base.namespaces, pods: [pod('x/a', {}, ['10.0.0.300'])] }),
    );
    expect(e.issues[0]).toMatchObject({ object: 'pod x/a', field: 'status.podIPs[0].ip' });
  });

  it('an interface name that could not be written safely', () => {
    const e = parseError(state({ ...base, local: [local('x/a', 'eth0"; drop')] }));
    expect(e.issues[0]).toMatchObject({ object: 'local pod x/a', field: 'interface' });
  });

  it('unknown fields outside the policy spec pass through', () => {
    const raw = state({
      ...base,
      policies: [{ ...policy('x/ok', { podSelector: {} }), status: {}, kind: 'NetworkPolicy' }],
    });
    expect(parseState(raw).policies).toHaveLength(1);
  });
});

describe('translate: errors for input it cannot enforce', () => {
  const tr = (raw: unknown) => errorOf(() => translate(parseState(raw)));

  it('a pod in a namespace the state does not list', () => {
    const e = tr(state({ ...base, pods: [pod('nowhere/a', {}, ['10.0.0.1'])] }));
    expect(e.issues[0]).toMatchObject({ object: 'pod nowhere/a', field: 'metadata.namespace' });
  });

  it('a local pod that is not in the state', () => {
    expect(tr(state({ ...base, local: [local('x/ghost', 'fl-g')] })).message).toBe(
      'local pod x/ghost: local[0]: no such pod in the state',
    );
  });

  it('two local pods on one interface', () => {
    const raw = state({
      namespaces: base.namespaces,
      pods: [pod('x/a', {}, []), pod('x/b', {}, [])],
      local: [local('x/a', 'fl'), local('x/b', 'fl')],
    });
    expect(tr(raw).issues[0]?.field).toBe('local[1].interface');
  });

  it('a malformed anycast annotation on a local pod', () => {
    const p = pod('x/a', {}, ['10.0.0.1']);
    (p.metadata as Record<string, unknown>)['annotations'] = {
      'flock.fritzlab.net/anycast': 'nope',
    };
    const e = tr(state({ namespaces: base.namespaces, pods: [p], local: [local('x/a', 'fl-a')] }));
    expect(e.issues[0]).toMatchObject({
      object: 'pod x/a',
      field: 'metadata.annotations["flock.fritzlab.net/anycast"]',
    });
  });

  it('the same policy twice', () => {
    const p = policy('x/twice', { podSelector: {} });
    expect(tr(state({ ...base, policies: [p, p] })).issues[0]?.object).toBe(
      'networkpolicy x/twice',
    );
  });
});
