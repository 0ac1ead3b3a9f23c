import { describe, expect, it } from 'vitest';
import { networkPolicy } from '../../testing/policy.js';
import { PolicyChecker, checkPolicy } from './validate.js';

const bigSelector = {
  matchExpressions: [
    { key: 'app', operator: 'In', values: Array.from({ length: 65 }, (_, i) => `v${i}`) },
  ],
};

describe('checkPolicy', () => {
  it('passes a valid policy through unchanged', () => {
    const raw = networkPolicy('shop/web', {
      podSelector: { matchLabels: { app: 'web' } },
      ingress: [{ ports: [{ port: 80 }] }],
    });
    const checked = checkPolicy(raw);
    expect(checked?.problem).toBeUndefined();
    expect(checked?.policy.spec.ingress).toEqual([{ ports: [{ port: 80 }] }]);
  });

  it('replaces an unenforceable ingress policy by one that isolates its pods for ingress only', () => {
    const checked = checkPolicy(
      networkPolicy('shop/web', {
        podSelector: { matchLabels: { app: 'web' } },
        ingress: [{ from: [{ podSelector: bigSelector }] }],
      }),
    );
    expect(checked?.policy).toEqual({
      metadata: { name: 'web', namespace: 'shop', uid: 'uid-np-web' },
      spec: { podSelector: { matchLabels: { app: 'web' } }, policyTypes: ['Ingress'] },
    });
    expect(checked?.problem).toMatch(
      /^networkpolicy shop\/web: spec\.ingress\[0\]\.from\[0\]\.podSelector\.matchExpressions\[0\]\.values: .* — its pods are isolated \(Ingress\) and it allows nothing/,
    );
  });

  it('isolates both directions when the policy has egress rules or unreadable policyTypes', () => {
    const egress = checkPolicy(
      networkPolicy('shop/a', {
        podSelector: {},
        egress: [{ to: [{ podSelector: bigSelector }] }],
      }),
    );
    expect(egress?.policy.spec.policyTypes).toEqual(['Ingress', 'Egress']);
    const types = checkPolicy(
      networkPolicy('shop/b', { podSelector: {}, policyTypes: ['Sideways'] }),
    );
    expect(types?.policy.spec.policyTypes).toEqual(['Ingress', 'Egress']);
    const declared = checkPolicy(
      networkPolicy('shop/c', {
        podSelector: {},
        policyTypes: ['Egress'],
        egress: [{ to: [{ podSelector: bigSelector }] }],
      }),
    );
    expect(declared?.policy.spec.policyTypes).toEqual(['Egress']);
  });

  it('an unreadable podSelector selects the whole namespace (fail closed), not nothing', () => {
    const checked = checkPolicy(networkPolicy('shop/a', { podSelector: bigSelector }));
    expect(checked?.policy.spec.podSelector).toEqual({});
    expect(checked?.problem).toMatch(/spec\.podSelector\.matchExpressions\[0\]\.values/);
  });

  it('refuses fields it does not understand instead of ignoring them', () => {
    const checked = checkPolicy(networkPolicy('shop/a', { podSelector: {}, ingressV2: [] }));
    expect(checked?.problem).toMatch(/ingressV2/);
  });

  it('checks each object once', () => {
    const checker = new PolicyChecker();
    const raw = networkPolicy('shop/a', { podSelector: {} });
    expect(checker.check(raw)).toBe(checker.check(raw));
    expect(checker.check(structuredClone(raw))).not.toBe(checker.check(raw));
  });
});
