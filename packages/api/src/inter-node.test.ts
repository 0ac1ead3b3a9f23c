import { describe, expect, it } from 'vitest';
import { validPoolSpec } from '../testing/testdata.js';
import { defaultInterNodePrefix, InterNodePrefix } from './inter-node.js';
import { PoolSpec } from './pool.js';

describe('inter-node translation prefix', () => {
  it('derives a ULA /96 per Pool UID: stable, valid, and another for another Pool', () => {
    const a = defaultInterNodePrefix('5d1c7a7e-0000-4000-8000-000000000001');
    expect(a).toMatch(/^fd[0-9a-f]{2}:[0-9a-f]{1,4}:[0-9a-f]{1,4}:4::\/96$/);
    expect(defaultInterNodePrefix('5d1c7a7e-0000-4000-8000-000000000001')).toBe(a);
    expect(defaultInterNodePrefix('5d1c7a7e-0000-4000-8000-000000000002')).not.toBe(a);
    expect(InterNodePrefix.safeParse(a).success).toBe(true);
  });

  it('a Private pool takes one of its own; the derived one passes the Pool rules', () => {
    const spec = {
      ...validPoolSpec(),
      ipv4: { cidr: '10.0.0.0/16', mode: 'Private', interNodePrefix: defaultInterNodePrefix('u') },
    };
    const parsed = PoolSpec.safeParse(spec);
    expect(parsed.error?.issues).toBeUndefined();
    expect(parsed.data?.ipv4?.interNodePrefix).toBe(defaultInterNodePrefix('u'));
  });
});
