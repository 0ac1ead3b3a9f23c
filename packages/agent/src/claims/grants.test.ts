import { nodeConfig } from '@flock/api/testing';
import { describe, expect, it } from 'vitest';
import { checkGrants } from './acquire.js';
import { allowedCommunities, grantFor } from './grants.js';

const spec = nodeConfig({
  spec: {
    cidr4: '192.0.2.16/28',
    pinnedCIDRs: ['2001:db8:200::/64', '2001:db8:100::/64'],
    anycastCIDRs: ['2001:db8:300::/120'],
    pinnedGrants: [
      {
        namespaceSelector: { matchLabels: { tenant: 'a' } },
        cidrs: ['2001:db8:200::/120'],
        communities: { standard: ['65000:1'] },
      },
      { namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': 'ops' } } },
    ],
    anycastGrants: [{ anyNamespace: true }],
    bgp: { asn: 64512, peers: [], allowedPodCommunities: { standard: ['65000:9'] } },
  },
}).spec;
const ns = (name: string, labels: Record<string, string> = {}) => ({ name, labels });
const request = (pinned: string[], anycast: string[] = []) => ({
  namespace: 'team',
  pod: 'p',
  uid: 'u',
  key: 'k',
  pinned,
  anycast,
});

describe('grants', () => {
  it('cover an address only inside their sub-ranges and for the namespaces they select', () => {
    expect(grantFor(spec, 'Pinned', '2001:db8:200::7', ns('team', { tenant: 'a' }))).toBeDefined();
    expect(grantFor(spec, 'Pinned', '2001:db8:200::7', ns('team'))).toBeUndefined();
    expect(
      grantFor(spec, 'Pinned', '2001:db8:200::1:7', ns('team', { tenant: 'a' })),
    ).toBeUndefined();
    // By name: the API server labels every namespace with it; a fake label cannot differ.
    expect(grantFor(spec, 'Pinned', '2001:db8:200::1:7', ns('ops'))).toBeDefined();
    expect(
      grantFor(
        spec,
        'Pinned',
        '2001:db8:200::1:7',
        ns('x', { 'kubernetes.io/metadata.name': 'ops' }),
      ),
    ).toBeUndefined();
    expect(grantFor(spec, 'Anycast', '2001:db8:300::1', ns('anyone'))).toBeDefined();
    expect(grantFor(spec, 'Anycast', '2001:db8:400::1', ns('anyone'))).toBeUndefined();
  });

  it('nothing is claimable without a grant (secure by default)', () => {
    const bare = { ...spec, pinnedGrants: undefined, anycastGrants: [] };
    expect(grantFor(bare, 'Pinned', '2001:db8:200::7', ns('ops'))).toBeUndefined();
    expect(grantFor(bare, 'Anycast', '2001:db8:300::1', ns('ops'))).toBeUndefined();
  });

  it('refuse at ADD: outside the ranges, not granted, inside the node prefix', () => {
    const tenant = ns('team', { tenant: 'a' });
    expect(() => checkGrants(spec, tenant, request(['2001:db8:200::7']))).not.toThrow();
    expect(() => checkGrants(spec, tenant, request(['2001:db8:999::7']))).toThrow(
      /pinned address 2001:db8:999::7 is outside this node's pinned ranges/,
    );
    expect(() => checkGrants(spec, ns('team'), request(['2001:db8:200::7']))).toThrow(
      /namespace team may not claim pinned address 2001:db8:200::7: no grant/,
    );
    expect(() => checkGrants(spec, ns('ops'), request(['2001:db8:100::7']))).toThrow(
      /lies in this node's prefix 2001:db8:100::\/64/,
    );
    expect(() => checkGrants(spec, tenant, request([], ['2001:db8:300::1']))).not.toThrow();
  });

  it('allow the communities of the grants that cover the namespace; legacy ones under anyNamespace', () => {
    expect(allowedCommunities(spec, ns('team', { tenant: 'a' }))).toEqual({
      standard: ['65000:1', '65000:9'],
      large: [],
    });
    expect(allowedCommunities(spec, ns('team'))).toEqual({ standard: ['65000:9'], large: [] });
    expect(allowedCommunities(spec)).toEqual({ standard: ['65000:1', '65000:9'], large: [] });
  });
});
