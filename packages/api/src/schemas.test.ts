import { describe, expect, it } from 'vitest';
import { NodeConfig, NodeConfigSpec } from './nodeconfig.js';
import { Pool, PoolSpec } from './pool.js';
import {
  invalidCases,
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
    expect(v4.ipv4?.nodePrefixLength).toBe(28);
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
    const schema = c.kind === 'Pool' ? PoolSpec : NodeConfigSpec;
    const r = schema.safeParse(c.spec);
    expect(r.success).toBe(false);
    expect(messages(r)).toContain(c.message);
  });

  it('names the field of a nested error', () => {
    const spec = validPoolSpec();
    spec.bgp.peers[1]!.address = 'nope';
    const r = PoolSpec.safeParse(spec);
    expect(r.error?.issues[0]?.path).toEqual(['bgp', 'peers', 1, 'address']);
  });
});
