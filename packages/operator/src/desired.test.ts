import { defaultInterNodePrefix, IP_ALGO_ANNOTATION, OPERATOR_FIELD_MANAGER } from '@flock/api';
import { grantTo } from '@flock/api/testing';
import { describe, expect, it } from 'vitest';
import { desiredNodeConfig, needsApply } from './desired.js';
import { baseSpec, makeNode, makePool, stored } from '../testing/fixtures.js';

const node = makeNode('n0', { pool: 'a' });
const prefixes = { cidr6: '2001:db8:100::/64' };

describe('needsApply', () => {
  it('is false for what the operator itself wrote, true once the pool changed', () => {
    const pool = makePool('a', { ...baseSpec(), pinned: { cidrs: ['2001:db8:200::/64'] } });
    const nc = stored(desiredNodeConfig(pool, node, prefixes));
    expect(needsApply(nc, desiredNodeConfig(pool, node, prefixes))).toBe(false);
    const more = makePool('a', { ...baseSpec(), pinned: { cidrs: ['2001:db8:200::/63'] } });
    expect(needsApply(nc, desiredNodeConfig(more, node, prefixes))).toBe(true);
    const v4 = { ...prefixes, cidr4: '192.0.2.0/28' };
    expect(needsApply(nc, desiredNodeConfig(pool, node, v4))).toBe(true);
  });

  it('wants its owner reference and finalizer back when someone removed them', () => {
    const pool = makePool('a');
    const want = desiredNodeConfig(pool, node, prefixes);
    expect(needsApply(stored(want, { finalizers: [] }), want)).toBe(true);
    const otherUid = stored(desiredNodeConfig(pool, makeNode('n0', {}, { uid: 'old' }), prefixes));
    expect(needsApply(otherUid, want)).toBe(true);
  });

  it('removes a range or annotation it applied, but leaves one another manager wrote', () => {
    const withBoth = makePool('a', {
      ...baseSpec(),
      ipAlgo: 'stable',
      anycast: { cidrs: ['2001:db8:300::/120'] },
    });
    const bare = desiredNodeConfig(makePool('a'), node, prefixes);
    const nc = stored(desiredNodeConfig(withBoth, node, prefixes));
    // No managedFields (the in-memory server): assume the operator applied them.
    expect(needsApply(nc, bare)).toBe(true);
    const managed = (fields: object) => ({
      ...nc,
      metadata: {
        ...nc.metadata,
        managedFields: [{ manager: OPERATOR_FIELD_MANAGER, operation: 'Apply', fieldsV1: fields }],
      },
    });
    expect(needsApply(managed({ 'f:spec': { 'f:pool': {}, 'f:cidr6': {} } }), bare)).toBe(false);
    expect(needsApply(managed({ 'f:spec': { 'f:anycastCIDRs': {} } }), bare)).toBe(true);
    expect(
      needsApply(
        managed({ 'f:metadata': { 'f:annotations': { [`f:${IP_ALGO_ANNOTATION}`]: {} } } }),
        bare,
      ),
    ).toBe(true);
  });

  it('copies the local preference and communities to every node, and wants them changed or gone with the pool', () => {
    const routes = {
      localPreference: 300,
      communities: {
        aggregates: { standard: ['65000:100'] },
        anycast: { large: ['65000:1:2'] },
        services: { standard: ['65000:400'] },
      },
      allowedPodCommunities: { standard: ['65000:666'] },
    };
    const pool = makePool('a', { ...baseSpec(), bgp: { ...baseSpec().bgp, ...routes } });
    const want = desiredNodeConfig(pool, node, prefixes);
    expect(want.spec.bgp).toMatchObject(routes);
    const nc = stored(want);
    expect(needsApply(nc, want)).toBe(false);
    const changed = makePool('a', {
      ...baseSpec(),
      bgp: { ...baseSpec().bgp, ...routes, localPreference: 50 },
    });
    expect(needsApply(nc, desiredNodeConfig(changed, node, prefixes))).toBe(true);
    const dropped = desiredNodeConfig(makePool('a'), node, prefixes);
    expect(dropped.spec.bgp).not.toHaveProperty('communities');
    expect(needsApply(nc, dropped)).toBe(true);
  });

  it("copies each list's grants beside its ranges, and leaves out a withdrawn list whole", () => {
    const toDefault = grantTo('default');
    const pool = makePool('a', {
      ...baseSpec(),
      pinned: { cidrs: ['2001:db8:200::/64'], grants: [toDefault] },
      anycast: {
        cidrs: ['2001:db8:300::/120'],
        grants: [{ anyNamespace: true, cidrs: ['2001:db8:300::/124'] }],
      },
    });
    const want = desiredNodeConfig(pool, node, prefixes);
    expect(want.spec).toMatchObject({
      pinnedCIDRs: ['2001:db8:200::/64'],
      pinnedGrants: [toDefault],
      anycastCIDRs: ['2001:db8:300::/120'],
      anycastGrants: [{ anyNamespace: true, cidrs: ['2001:db8:300::/124'] }],
    });
    const nc = stored(want);
    expect(needsApply(nc, want)).toBe(false);
    const regranted = makePool('a', {
      ...baseSpec(),
      pinned: { cidrs: ['2001:db8:200::/64'], grants: [] },
      anycast: pool.spec.anycast,
    });
    expect(needsApply(nc, desiredNodeConfig(regranted, node, prefixes))).toBe(true);
    const withdrawn = desiredNodeConfig(pool, node, prefixes, new Set(['pinned']));
    expect(withdrawn.spec).not.toHaveProperty('pinnedCIDRs');
    expect(withdrawn.spec).not.toHaveProperty('pinnedGrants');
    expect(withdrawn.spec.anycastGrants).toHaveLength(1);
    expect(needsApply(nc, withdrawn)).toBe(true);
  });

  it('copies who gets IPv4 (assign, grants) to nodes with a slice, and leaves the default out', () => {
    const v4 = { ...prefixes, cidr4: '192.0.2.0/28' };
    const always = makePool('a', { ...baseSpec(), ipv4: { cidr: '192.0.2.0/24' } });
    expect(desiredNodeConfig(always, node, v4).spec).not.toHaveProperty('ipv4');
    const onRequest = makePool('a', {
      ...baseSpec(),
      ipv4: { cidr: '192.0.2.0/24', assign: 'OnRequest', grants: [grantTo('web')] },
    });
    const want = desiredNodeConfig(onRequest, node, v4);
    expect(want.spec.ipv4).toEqual({ assign: 'OnRequest', grants: [grantTo('web')] });
    // Without a slice there is nothing to assign.
    expect(desiredNodeConfig(onRequest, node, prefixes).spec).not.toHaveProperty('ipv4');
    const nc = stored(want);
    expect(needsApply(nc, want)).toBe(false);
    // Back to Always: the operator takes the field away again.
    expect(needsApply(nc, desiredNodeConfig(always, node, v4))).toBe(true);
  });

  it('copies a Private mode with the range kept unNATed and its translation prefix', () => {
    const v4 = { ...prefixes, cidr4: '10.20.3.0/24' };
    const private4 = makePool('a', {
      ...baseSpec(),
      ipv4: { cidr: '10.20.0.0/16', mode: 'Private' },
    });
    // None named: the one derived from the Pool's UID, the same for every node.
    expect(desiredNodeConfig(private4, node, v4).spec.ipv4).toEqual({
      assign: 'Always',
      mode: 'Private',
      clusterCIDRs: ['10.20.0.0/16'],
      interNodePrefix: defaultInterNodePrefix(private4.metadata.uid ?? 'a'),
    });
    const named = makePool('a', {
      ...baseSpec(),
      ipv4: { cidr: '10.20.0.0/16', mode: 'Private', interNodePrefix: 'fd12:3456:789a:4::/96' },
    });
    expect(desiredNodeConfig(named, node, v4).spec.ipv4?.interNodePrefix).toBe(
      'fd12:3456:789a:4::/96',
    );
  });

  it('copies NAT64 (defaults filled in) and takes it away when the Pool drops it', () => {
    const nat64 = makePool('a', { ...baseSpec(), nat64: { prefix: '2001:db8:64::/96' } });
    const want = desiredNodeConfig(nat64, node, prefixes);
    expect(want.spec.nat64).toEqual({ prefix: '2001:db8:64::/96', pool: '192.168.240.0/20' });
    // With IPv4 ranges in the Pool, they come along: nothing translated reaches them.
    const ranged = makePool('a', {
      ...baseSpec(),
      ipv4: { cidr: '192.0.2.0/24' },
      services: { cidrs: ['2001:db8:400::/120', '198.51.100.64/28'], clusterIPs: ['10.96.0.0/16'] },
      nat64: {},
    });
    expect(desiredNodeConfig(ranged, node, prefixes).spec.nat64).toEqual({
      prefix: '64:ff9b::/96',
      pool: '192.168.240.0/20',
      clusterCIDRs: ['192.0.2.0/24', '198.51.100.64/28', '10.96.0.0/16'],
    });
    const nc = stored(want);
    expect(needsApply(nc, want)).toBe(false);
    const without = desiredNodeConfig(makePool('a', baseSpec()), node, prefixes);
    expect(without.spec).not.toHaveProperty('nat64');
    expect(needsApply(nc, without)).toBe(true);
  });
});
