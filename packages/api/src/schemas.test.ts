import { describe, expect, it } from 'vitest';
import { AddressClaim, claimName } from './address-claim.js';
import { NodeConfig, NodeConfigSpec } from './nodeconfig.js';
import { ipv4NodePrefixLength } from './ipv4.js';
import { Pool, PoolSpec } from './pool.js';
import {
  claimObject,
  releasedServiceClaimSpec,
  validAnycastClaimSpec,
  validPinnedClaimSpec,
  validServiceClaimSpec,
} from '../testing/claims.js';
import {
  boundedPoolSpec,
  invalidCases,
  invalidObject,
  nodeConfigObject,
  poolObject,
  validNodeConfigSpec,
  validPoolSpec,
} from '../testing/testdata.js';

const messages = (r: {
  success: boolean;
  error?: { issues: { message: string; path: PropertyKey[] }[] };
}) => (r.error?.issues ?? []).map((i) => `${i.path.join('.')}: ${i.message}`).join('\n');

describe('Pool and NodeConfig schemas', () => {
  it('accept the valid examples', () => {
    expect(Pool.safeParse(poolObject('dc1', validPoolSpec())).success).toBe(true);
    expect(NodeConfig.safeParse(nodeConfigObject('node-a', validNodeConfigSpec())).success).toBe(
      true,
    );
  });

  it('fill defaults', () => {
    const spec = PoolSpec.parse({ ipv6: { cidr: '2001:db8::/48' }, bgp: { asn: 64512 } });
    expect(spec.ipv6.nodePrefixLength).toBe(64);
    expect(spec.bgp.peers).toEqual([]);
    const v4 = PoolSpec.parse({ ...validPoolSpec(), ipv4: { cidr: '10.0.0.0/16' } });
    expect(v4.ipv4).toEqual({ cidr: '10.0.0.0/16', assign: 'Always', mode: 'Public' });
    // The slice length follows the mode: 14 scarce public addresses, 254 private ones.
    expect(ipv4NodePrefixLength(v4.ipv4!)).toBe(28);
    const private4 = PoolSpec.parse({
      ...validPoolSpec(),
      ipv4: { cidr: '10.0.0.0/16', mode: 'Private' },
    });
    expect(ipv4NodePrefixLength(private4.ipv4!)).toBe(24);
    expect(ipv4NodePrefixLength({ ...private4.ipv4!, nodePrefixLength: 26 })).toBe(26);
    const bfd = PoolSpec.parse({
      ...validPoolSpec(),
      bgp: {
        asn: 64512,
        peers: [{ address: '2001:db8::1', asn: 65000, bfd: true, bfdTimers: { multiplier: 5 } }],
      },
    });
    expect(bfd.bgp.peers[0]?.bfdTimers).toEqual({
      minRxIntervalMs: 300,
      minTxIntervalMs: 300,
      multiplier: 5,
    });
  });

  it('accept a minimal NodeConfig without IPv4', () => {
    const r = NodeConfigSpec.safeParse({
      pool: 'p',
      cidr6: '2001:db8::/64',
      bgp: { asn: 4200000000 },
    });
    expect(r.success, messages(r)).toBe(true);
  });

  it('has at least 15 invalid cases', () => {
    expect(invalidCases.length).toBeGreaterThanOrEqual(15);
  });

  it.each(invalidCases.map((c) => [c.name, c] as const))('refuses: %s', (_name, c) => {
    const r =
      c.kind === 'AddressClaim'
        ? AddressClaim.safeParse(invalidObject(c, 'unused'))
        : (c.kind === 'Pool' ? PoolSpec : NodeConfigSpec).safeParse(c.spec);
    expect(r.success).toBe(false);
    expect(messages(r)).toContain(c.message);
  });

  it('accepts a Pool at every bound of its floating ranges', () => {
    const r = PoolSpec.safeParse(boundedPoolSpec());
    expect(r.success, messages(r)).toBe(true);
  });

  it('names both ranges at fault, at the field of the list', () => {
    const spec = validPoolSpec();
    spec.anycast.cidrs = ['2001:db8:100:ff::/120', '2001:db8:300::/120'];
    const r = PoolSpec.safeParse(spec);
    expect(r.error?.issues).toEqual([
      expect.objectContaining({
        path: ['anycast', 'cidrs'],
        message:
          "anycast range 2001:db8:100:ff::/120 overlaps the pool's ipv6.cidr 2001:db8:100::/48",
      }),
    ]);
  });

  it('keeps the rules of a range that is checked twice (its grammar and its width)', () => {
    const spec = validPoolSpec();
    spec.pinned.cidrs = ['2001:db8:200::5/64', '2001:db9::/32'];
    const text = messages(PoolSpec.safeParse(spec));
    expect(text).toContain('pinned.cidrs[] has host bits set');
    expect(text).toContain('pinned range 2001:db9::/32 is too wide');
  });
  it('names the field of a nested error', () => {
    const spec = validPoolSpec();
    spec.bgp.peers[1]!.address = 'nope';
    const r = PoolSpec.safeParse(spec);
    expect(r.error?.issues[0]?.path).toEqual(['bgp', 'peers', 1, 'address']);
  });
});

describe('AddressClaim schema', () => {
  it('accepts a pinned, an anycast and a Service claim (in use and released) named after their addresses', () => {
    for (const spec of [
      validPinnedClaimSpec(),
      validAnycastClaimSpec(),
      validServiceClaimSpec(),
      releasedServiceClaimSpec(),
    ]) {
      const r = AddressClaim.safeParse(claimObject(spec));
      expect(r.success, messages(r)).toBe(true);
    }
    expect(
      AddressClaim.parse(claimObject({ ...validPinnedClaimSpec(), holders: [] })).spec,
    ).toMatchObject({ holders: [] });
  });

  it('names an address by its canonical spelling, one name per address', () => {
    expect(claimName('2001:db8::1')).toBe('2001-0db8-0000-0000-0000-0000-0000-0001');
    expect(claimName('2001:DB8:0:0::1')).toBe(claimName('2001:db8::1'));
    expect(claimName('192.0.2.7')).toBe('192.0.2.7');
    expect(claimName('::ffff:1.2.3.4')).toBe('0000-0000-0000-0000-0000-ffff-0102-0304');
    expect(() => claimName('nope')).toThrow(/not an IP address/);
  });
});
