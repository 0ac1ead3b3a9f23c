import { describe, expect, it } from 'vitest';
import { policyWarnings } from './events.js';

describe('policyWarnings', () => {
  it('a Warning on the object at fault: the policy, or the pod over the limits', () => {
    const sent: unknown[] = [];
    const warn = policyWarnings({ event: async (...args) => void sent.push(args) });
    warn({ namespace: 'shop', name: 'bad', uid: 'u1', message: 'unreadable' });
    warn({ namespace: 'shop', name: 'huge', message: 'too big', reason: 'PolicyOverLimit' });
    warn({
      kind: 'Pod',
      namespace: 'shop',
      name: 'web',
      uid: 'u2',
      message: 'm',
      reason: 'PodOverLimit',
    });
    expect(sent).toEqual([
      [
        {
          apiVersion: 'networking.k8s.io/v1',
          kind: 'NetworkPolicy',
          metadata: { name: 'bad', namespace: 'shop', uid: 'u1' },
        },
        { type: 'Warning', reason: 'PolicyNotEnforceable', action: 'Enforce', note: 'unreadable' },
      ],
      [
        {
          apiVersion: 'networking.k8s.io/v1',
          kind: 'NetworkPolicy',
          metadata: { name: 'huge', namespace: 'shop' },
        },
        { type: 'Warning', reason: 'PolicyOverLimit', action: 'Enforce', note: 'too big' },
      ],
      [
        { apiVersion: 'v1', kind: 'Pod', metadata: { name: 'web', namespace: 'shop', uid: 'u2' } },
        { type: 'Warning', reason: 'PodOverLimit', action: 'Enforce', note: 'm' },
      ],
    ]);
  });
});
