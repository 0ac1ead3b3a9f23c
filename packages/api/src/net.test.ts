import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  cidrContains,
  cidrContainsIp,
  cidrsOverlap,
  ipFamily,
  ipToBigInt,
  isNetworkAddress,
  splitCidr,
} from './net.js';

describe('address grammar', () => {
  it('classifies addresses', () => {
    expect(ipFamily('192.0.2.1')).toBe(4);
    expect(ipFamily('2001:db8::1')).toBe(6);
    expect(ipFamily('::ffff:192.0.2.1')).toBe(6);
    expect(ipFamily('fe80::1%eth0')).toBeUndefined();
    expect(ipFamily('192.0.2.256')).toBeUndefined();
  });

  it('splits CIDRs strictly', () => {
    expect(splitCidr('2001:db8::/48')).toEqual({
      address: '2001:db8::',
      prefixLength: 48,
      family: 6,
    });
    expect(splitCidr('192.0.2.0/33')).toBeUndefined();
    expect(splitCidr('192.0.2.0/024')).toBeUndefined();
    expect(splitCidr('192.0.2.0')).toBeUndefined();
    expect(splitCidr('192.0.2.0/24/1')).toBeUndefined();
  });

  it('checks host bits', () => {
    expect(isNetworkAddress('2001:db8:100::/48')).toBe(true);
    expect(isNetworkAddress('2001:db8:100::1/48')).toBe(false);
    expect(isNetworkAddress('192.0.2.16/28')).toBe(true);
    expect(isNetworkAddress('192.0.2.17/28')).toBe(false);
  });

  it('converts IPv6 text of any spelling to the same number', () => {
    fc.assert(
      fc.property(fc.bigInt({ min: 0n, max: (1n << 128n) - 1n }), (n) => {
        const groups = Array.from({ length: 8 }, (_, i) =>
          Number((n >> BigInt(112 - 16 * i)) & 0xffffn).toString(16),
        );
        expect(ipToBigInt(groups.join(':'))).toBe(n);
      }),
    );
    expect(ipToBigInt('::ffff:192.0.2.1')).toBe(0xffffc0000201n);
    expect(ipToBigInt('2001:db8::')).toBe(0x20010db8n << 96n);
  });
});

describe('cidrContains, cidrsOverlap, cidrContainsIp (as CEL containsCIDR, containsIP)', () => {
  it('compares the network bits of one family', () => {
    expect(cidrContains('2001:db8::/32', '2001:db8:1::/48')).toBe(true);
    expect(cidrContains('2001:db8:1::/48', '2001:db8::/32')).toBe(false);
    expect(cidrContains('2001:db8::/32', '2001:db9::/48')).toBe(false);
    expect(cidrContains('0.0.0.0/0', '::/0')).toBe(false);
    expect(cidrContains('::/0', '::/0')).toBe(true);
    expect(cidrContains('192.0.2.0/24', '192.0.2.128/25')).toBe(true);
    expect(cidrContains('192.0.2.0/24', 'nope')).toBe(false);
    expect(cidrsOverlap('192.0.2.128/25', '192.0.2.0/24')).toBe(true);
    expect(cidrsOverlap('192.0.2.0/25', '192.0.2.128/25')).toBe(false);
    expect(cidrContainsIp('2001:db8:ffff::/120', '2001:db8:ffff::1')).toBe(true);
    expect(cidrContainsIp('2001:db8:ffff::/120', '2001:db8:ffff::100')).toBe(false);
    expect(cidrContainsIp('203.0.113.0/28', '203.0.113.1')).toBe(true);
    expect(cidrContainsIp('203.0.113.0/28', 'router')).toBe(false);
  });
});
