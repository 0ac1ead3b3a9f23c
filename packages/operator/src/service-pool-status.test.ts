// A pool's Service ranges in what planPool writes: the NodeConfigs carry the ranges and the
// clusterIPs (a Service list overlapping an older pool's range is withdrawn, clusterIPs are
// not), and the pool's status counts the addresses and names the Services waiting for one.
import { AddressClaim, PoolConditions } from '@flock/api';
import { claimObject, validServiceClaimSpec } from '@flock/api/testing';
import { describe, expect, it } from 'vitest';
import { planPool } from './plan.js';
import {
  baseSpec,
  condition as cond,
  makeNode,
  makePool,
  planInput as input,
  T0,
} from '../testing/fixtures.js';

const services = {
  cidrs: ['2001:db8:400::/126', '203.0.113.64/30'],
  grants: [{ anyNamespace: true }],
  clusterIPs: ['fd00:10:96::/112', '10.96.0.0/12'],
};
const claim = (address: string, released = false) =>
  AddressClaim.parse(
    claimObject({
      ...validServiceClaimSpec(),
      address,
      ...(released ? { services: [], releasedAt: '2030-01-01T00:00:00Z' } : {}),
    }),
  );

describe('planPool: Service ranges', () => {
  it('gives every NodeConfig the Service ranges and the clusterIPs, without grants', () => {
    const pool = makePool('a', { ...baseSpec(), services });
    const plan = planPool(input({ pool, nodes: [makeNode('n0', { pool: 'a' })] }));
    expect(plan.apply[0]?.object.spec).toMatchObject({
      serviceCIDRs: services.cidrs,
      clusterIPCIDRs: services.clusterIPs,
    });
    expect(plan.apply[0]?.object.spec).not.toHaveProperty('serviceGrants');
  });

  it("withdraws a newer pool's Service ranges that overlap an older pool's range, not its clusterIPs", () => {
    const older = makePool(
      'old',
      { ...baseSpec(), anycast: { cidrs: ['2001:db8:400::/120'] } },
      { created: T0 },
    );
    const newer = makePool(
      'new',
      {
        ...baseSpec(),
        nodeSelector: { matchLabels: { pool: 'b' } },
        ipv6: { cidr: '2001:db8:200::/60', nodePrefixLength: 64 },
        services,
      },
      { created: T0 + 1000 },
    );
    const plan = planPool(
      input({ pool: newer, pools: [older, newer], nodes: [makeNode('b0', { pool: 'b' })] }),
    );
    const spec = plan.apply[0]?.object.spec;
    expect(spec).not.toHaveProperty('serviceCIDRs');
    expect(spec?.clusterIPCIDRs).toEqual(services.clusterIPs);
    expect(cond(plan.status.conditions, PoolConditions.Overlap)).toMatchObject({
      reason: 'FloatingRangesWithdrawn',
      message: expect.stringContaining(
        'services range 2001:db8:400::/126 of pool new overlaps anycast range 2001:db8:400::/120 of pool old',
      ),
    });
  });

  it('counts assigned, quarantined and free addresses, and names the Services waiting', () => {
    const pool = makePool('a', { ...baseSpec(), services });
    const claims = [
      claim('2001:db8:400::1'),
      claim('203.0.113.65'),
      claim('203.0.113.66', true),
      claim('2001:db8:999::1'), // another pool's
    ];
    const full = planPool(input({ pool, serviceClaims: claims, waitingServices: ['shop/web'] }));
    expect(full.status.services).toEqual({
      ipv6: { total: 3, assigned: 1, quarantined: 0, free: 2 },
      ipv4: { total: 2, assigned: 1, quarantined: 1, free: 0 },
    });
    expect(cond(full.status.conditions, PoolConditions.ServicesExhausted)).toMatchObject({
      status: 'True',
      reason: 'NoFreeAddress',
      message: '1 Service(s) wait for an address: shop/web',
    });
    expect(full.events.map((e) => e.reason)).toContain(PoolConditions.ServicesExhausted);
    const after = planPool(
      input({ pool: makePool('a', { ...baseSpec(), services }, { status: full.status }) }),
    );
    expect(cond(after.status.conditions, PoolConditions.ServicesExhausted)).toMatchObject({
      status: 'False',
      message: '3 IPv6 and 2 IPv4 Service address(es) free',
    });
  });

  it('counts an IPv6 /48 of Service addresses up to 2^53 - 1', () => {
    const wide = { ...services, cidrs: ['2001:db8:400::/48'] };
    const plan = planPool(input({ pool: makePool('a', { ...baseSpec(), services: wide }) }));
    expect(plan.status.services?.ipv6?.total).toBe(Number.MAX_SAFE_INTEGER);
    expect(plan.status.services).not.toHaveProperty('ipv4');
  });

  it('writes no Service counts or condition for a pool without Service ranges', () => {
    const plan = planPool(input({ pool: makePool('a') }));
    expect(plan.status).not.toHaveProperty('services');
    expect(cond(plan.status.conditions, PoolConditions.ServicesExhausted)).toBeUndefined();
  });
});
