import { describe, expect, it } from 'vitest';
import { networkPolicy } from '../../testing/policy.js';
import { checkClusterPolicy } from './cluster-validate.js';
import {
  CachedClusterNetworkPolicy,
  CachedNetworkPolicy,
  MAX_POLICY_SPEC_BYTES,
} from './trim-policy.js';
import { checkPolicy } from './validate.js';

/** A spec over the limit: an allow rule with thousands of ipBlocks. */
const huge = (spec: Record<string, unknown>) => ({
  ...spec,
  ingress: [
    {
      from: Array.from({ length: 3000 }, (_, i) => ({
        ipBlock: { cidr: `2001:db8:${i.toString(16)}::/48` },
      })),
    },
  ],
});

describe('the NetworkPolicy cache', () => {
  it('keeps identity and spec: no managedFields, annotations or status', () => {
    const raw = networkPolicy('shop/web', {
      podSelector: { matchLabels: { app: 'web' } },
      ingress: [{ ports: [{ port: 80 }] }],
    });
    const served = {
      ...raw,
      metadata: {
        ...raw.metadata,
        resourceVersion: '9',
        generation: 2,
        annotations: { 'kubectl.kubernetes.io/last-applied-configuration': '{"big": true}' },
        managedFields: [{ manager: 'kubectl', fieldsV1: {} }],
      },
      status: { conditions: [] },
    };
    expect(CachedNetworkPolicy.parse(served)).toEqual({
      apiVersion: 'networking.k8s.io/v1',
      kind: 'NetworkPolicy',
      metadata: { name: 'web', namespace: 'shop', uid: 'uid-np-web', resourceVersion: '9' },
      spec: raw.spec,
    });
  });

  it('an over-size policy is kept as its fail-closed stand-in: its pods isolated, nothing allowed, reported', () => {
    const raw = networkPolicy(
      'shop/big',
      huge({ podSelector: { matchLabels: { app: 'web' } }, policyTypes: ['Ingress', 'Egress'] }),
    );
    expect(JSON.stringify(raw.spec).length).toBeGreaterThan(MAX_POLICY_SPEC_BYTES);
    const kept = CachedNetworkPolicy.parse(raw);
    expect(JSON.stringify(kept).length).toBeLessThan(1024);
    expect(kept.spec).toEqual({
      podSelector: { matchLabels: { app: 'web' } },
      policyTypes: ['Ingress', 'Egress'],
    });
    const checked = checkPolicy(kept);
    expect(checked?.policy).toEqual({
      metadata: { name: 'big', namespace: 'shop', uid: 'uid-np-big' },
      spec: kept.spec,
    });
    expect(checked?.reason).toBe('PolicyOverLimit');
    expect(checked?.problem).toMatch(
      /^networkpolicy shop\/big: spec: [\d,]+ bytes \(flock keeps at most 65,536\) — its pods are isolated \(Ingress and Egress\) and it allows nothing/,
    );
  });

  it('an over-size podSelector isolates the whole namespace (fail closed), not nothing', () => {
    const matchLabels = Object.fromEntries(
      Array.from({ length: 2000 }, (_, i) => [`example.com/key-${i}`, 'x'.repeat(40)]),
    );
    const kept = CachedNetworkPolicy.parse(
      networkPolicy('shop/sel', { podSelector: { matchLabels } }),
    );
    expect(kept.spec).toEqual({ podSelector: {}, policyTypes: ['Ingress'] });
    expect(checkPolicy(kept)?.reason).toBe('PolicyOverLimit');
  });
});

describe('the ClusterNetworkPolicy cache', () => {
  it('an over-size one keeps what its stand-in reads: its Deny rules deny everything, Accept ones match nothing', () => {
    const peers = Array.from({ length: 3000 }, (_, i) => ({
      namespaces: { matchLabels: { team: `t${i}` } },
    }));
    const raw = {
      apiVersion: 'policy.networking.k8s.io/v1alpha2',
      kind: 'ClusterNetworkPolicy',
      metadata: { name: 'big', uid: 'u-big', managedFields: [{ manager: 'x' }] },
      spec: {
        tier: 'Admin',
        priority: 5,
        subject: { namespaces: { matchLabels: { team: 'a' } } },
        ingress: [
          { name: 'deny', action: 'Deny', from: peers },
          { name: 'allow', action: 'Accept', from: peers },
        ],
      },
    };
    const kept = CachedClusterNetworkPolicy.parse(raw);
    expect(kept.metadata).toEqual({ name: 'big', uid: 'u-big' });
    expect(kept.spec).toEqual({
      tier: 'Admin',
      priority: 5,
      subject: { namespaces: { matchLabels: { team: 'a' } } },
      ingress: [{ action: 'Deny' }, { action: 'Accept' }],
      egress: [],
    });
    const checked = checkClusterPolicy(kept);
    expect(checked?.reason).toBe('PolicyOverLimit');
    expect(checked?.policy.spec.subject).toEqual({ namespaces: { matchLabels: { team: 'a' } } });
    expect(checked?.policy.spec.ingress).toEqual([
      { name: 'flock-fail-closed', action: 'Deny', from: [{ namespaces: {} }] },
    ]);
    expect(checked?.problem).toMatch(/^clusternetworkpolicy big: spec: [\d,]+ bytes/);
  });
});
