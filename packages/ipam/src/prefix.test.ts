import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { canonicalAddress, formatAddress, isCanonicalAddress, parseAddress } from './address.js';
import {
  cidrsContainIp,
  formatPrefix,
  normalizeCidr,
  parsePrefix,
  prefixContains,
  prefixContainsAddress,
  prefixesOverlap,
  prefixSize,
  subPrefix,
  subPrefixIndex,
  type Prefix,
} from './prefix.js';

const p = (text: string): Prefix => {
  const parsed = parsePrefix(text);
  if (!parsed.ok) throw new Error(parsed.error);
  return parsed.value;
};

describe('addresses', () => {
  it('formats IPv6 in RFC 5952 canonical form', () => {
    expect(canonicalAddress('2001:0DB8:0:0:1:0:0:1')).toBe('2001:db8::1:0:0:1');
    expect(canonicalAddress('1:0:0:1:0:0:1:1')).toBe('1::1:0:0:1:1'); // first of two equal runs
    expect(canonicalAddress('1:0:1:1:1:1:1:1')).toBe('1:0:1:1:1:1:1:1'); // never "::" for one group
    expect(canonicalAddress('2001:db8:0:0:0:0:0:0')).toBe('2001:db8::');
    expect(canonicalAddress('192.0.2.1')).toBe('192.0.2.1');
  });

  it('refuses what is not an address', () => {
    for (const bad of ['', 'fe80::1%eth0', '01.2.3.4', '2001:db8::/64', '1.2.3', 'x']) {
      expect(parseAddress(bad), bad).toBeUndefined();
    }
  });

  it('tells canonical text from other spellings', () => {
    expect(isCanonicalAddress('2001:db8::1', 6)).toBe(true);
    expect(isCanonicalAddress('2001:DB8::1')).toBe(false);
    expect(isCanonicalAddress('2001:db8:0::1')).toBe(false);
    expect(isCanonicalAddress('192.0.2.1', 6)).toBe(false);
  });

  it('round-trips every IPv6 value through canonical text', () => {
    fc.assert(
      fc.property(fc.bigInt({ min: 0n, max: (1n << 128n) - 1n }), (value) => {
        const text = formatAddress(6, value);
        expect(parseAddress(text)).toEqual({ family: 6, value });
        expect(isCanonicalAddress(text)).toBe(true);
      }),
    );
  });
});

describe('prefixes', () => {
  it('parses and normalises', () => {
    expect(p('2001:DB8:0:0::/48')).toEqual({
      family: 6,
      network: p('2001:db8::/48').network,
      length: 48,
    });
    expect(normalizeCidr('2001:0db8:0100:0000::/56')).toEqual({
      ok: true,
      value: '2001:db8:100::/56',
    });
    expect(normalizeCidr('10.0.0.0/8')).toEqual({ ok: true, value: '10.0.0.0/8' });
  });

  it('refuses host bits unless asked to mask them', () => {
    const refused = parsePrefix('10.0.0.7/24');
    expect(refused.ok).toBe(false);
    expect(refused.ok || refused.error).toContain('use the network address 10.0.0.0/24');
    expect(normalizeCidr('10.0.0.7/24', { allowHostBits: true })).toEqual({
      ok: true,
      value: '10.0.0.0/24',
    });
  });

  it('refuses malformed CIDRs', () => {
    for (const bad of [
      '10.0.0.0',
      '10.0.0.0/33',
      '2001:db8::/129',
      '10.0.0.0/08',
      'a/1',
      '10.0.0.0/1/2',
    ]) {
      expect(parsePrefix(bad).ok, bad).toBe(false);
    }
  });

  it('answers containment and overlap', () => {
    expect(prefixContains(p('2001:db8::/48'), p('2001:db8:0:ff::/64'))).toBe(true);
    expect(prefixContains(p('2001:db8::/48'), p('2001:db8:1::/64'))).toBe(false);
    expect(prefixContains(p('2001:db8::/64'), p('2001:db8::/48'))).toBe(false);
    expect(prefixContains(p('10.0.0.0/8'), p('::/0'))).toBe(false);
    expect(prefixContainsAddress(p('10.1.0.0/16'), parseAddress('10.1.255.255')!)).toBe(true);
    expect(prefixContainsAddress(p('10.1.0.0/16'), parseAddress('10.2.0.0')!)).toBe(false);
    expect(prefixesOverlap(p('10.0.0.0/24'), p('10.0.0.128/25'))).toBe(true);
    expect(prefixesOverlap(p('10.0.0.0/25'), p('10.0.0.128/25'))).toBe(false);
  });

  it('indexes sub-prefixes', () => {
    const pool = p('2001:db8:100::/48');
    expect(formatPrefix(subPrefix(pool, 64, 0))).toBe('2001:db8:100::/64');
    expect(formatPrefix(subPrefix(pool, 64, 65535))).toBe('2001:db8:100:ffff::/64');
    expect(subPrefixIndex(pool, p('2001:db8:100:ab::/64'))).toBe(0xabn);
    expect(subPrefixIndex(pool, p('2001:db8:101::/64'))).toBeUndefined();
    expect(formatPrefix(subPrefix(p('192.0.2.0/24'), 28, 15))).toBe('192.0.2.240/28');
    expect(prefixSize(p('192.0.2.0/28'))).toBe(16n);
  });

  it('keeps sub-prefix index and containment consistent', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 0, max: 2 ** 16 - 1 }),
        fc.integer({ min: 56, max: 64 }),
        (index, length) => {
          const pool = p('2001:db8:100::/48');
          const size = 2 ** (length - 48);
          const sub = subPrefix(pool, length, index % size);
          expect(prefixContains(pool, sub)).toBe(true);
          expect(subPrefixIndex(pool, sub)).toBe(BigInt(index % size));
          expect(p(formatPrefix(sub))).toEqual(sub);
        },
      ),
    );
  });
});

describe('cidrsContainIp', () => {
  it('answers as the parsed prefixes do: in, out of, and unparsable', () => {
    const cidrs = ['2001:db8:200::/64', '198.51.100.0/24', 'not a cidr'];
    const check = () => {
      expect(cidrsContainIp(cidrs, '2001:db8:200::10')).toBe(true);
      expect(cidrsContainIp(cidrs, '2001:db8:201::10')).toBe(false);
      expect(cidrsContainIp(cidrs, '198.51.100.7')).toBe(true);
      expect(cidrsContainIp(cidrs, '198.51.101.7')).toBe(false);
      expect(cidrsContainIp(cidrs, 'nonsense')).toBe(false);
    };
    check();
  });

  it('agrees with prefixContainsAddress for any address and prefix', () => {
    fc.assert(
      fc.property(fc.ipV4(), fc.ipV4(), fc.integer({ min: 0, max: 32 }), (ip, net, length) => {
        const p = parsePrefix(`${net}/${length}`, { allowHostBits: true });
        if (!p.ok) throw new Error(p.error);
        const cidr = formatPrefix(p.value);
        expect(cidrsContainIp([cidr], ip)).toBe(prefixContainsAddress(p.value, parseAddress(ip)!));
      }),
    );
  });
});
