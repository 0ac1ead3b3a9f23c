import { describe, expect, it } from 'vitest';
import { parseAnycast, parseIpAlgo, parsePinnedIp } from './annotations.js';
import { parseIpv4Request, podIpv4Mode } from './ipv4.js';

describe('annotation grammars', () => {
  it('ip-algo: trims, accepts known names, refuses others', () => {
    expect(parseIpAlgo(undefined)).toBeUndefined();
    expect(parseIpAlgo('  ')).toBeUndefined();
    expect(parseIpAlgo(' stable\n')).toEqual({ ok: true, value: 'stable' });
    expect(parseIpAlgo('random,stable')).toMatchObject({ ok: false });
    expect(parseIpAlgo('Stable')).toMatchObject({
      ok: false,
      error: expect.stringContaining('"Stable"'),
    });
  });

  it('pinned-ip: one address per family', () => {
    expect(parsePinnedIp('2001:db8::5')).toEqual({ ok: true, value: { ipv6: '2001:db8::5' } });
    expect(parsePinnedIp('2001:db8::5, 192.0.2.5')).toEqual({
      ok: true,
      value: { ipv6: '2001:db8::5', ipv4: '192.0.2.5' },
    });
    expect(parsePinnedIp('2001:db8::5,2001:db8::6')).toMatchObject({
      ok: false,
      error: expect.stringContaining('more than one IPv6'),
    });
    expect(parsePinnedIp('2001:db8::5/128')).toMatchObject({ ok: false });
    expect(parsePinnedIp('fe80::1%eth0')).toMatchObject({ ok: false });
  });

  it('anycast: list of addresses, no duplicates even in another spelling', () => {
    expect(parseAnycast('2001:db8:300::1,192.0.2.9')).toEqual({
      ok: true,
      value: ['2001:db8:300::1', '192.0.2.9'],
    });
    expect(parseAnycast('2001:db8::1,2001:db8:0::1')).toMatchObject({
      ok: false,
      error: expect.stringContaining('twice'),
    });
    expect(parseAnycast('$(reboot)')).toMatchObject({ ok: false });
    const many = Array.from({ length: 17 }, (_, i) => `2001:db8::${i + 1}`).join(',');
    expect(parseAnycast(many)).toMatchObject({
      ok: false,
      error: expect.stringContaining('at most 16'),
    });
  });
});

describe('ipv4 annotation', () => {
  it('takes public or none, trimmed, and says what else it would take', () => {
    expect(parseIpv4Request(undefined)).toBeUndefined();
    expect(parseIpv4Request(' ')).toBeUndefined();
    expect(parseIpv4Request(' public ')).toEqual({ ok: true, value: 'public' });
    expect(parseIpv4Request('none')).toEqual({ ok: true, value: 'none' });
    expect(parseIpv4Request('Public')).toEqual({
      ok: false,
      error: '"Public" is not one of public, none',
    });
  });

  it("names a pod's IPv4 mode by its address and its node's slice and mode", () => {
    const publicNode = { cidr4: '192.0.2.0/28' };
    const privateNode = { cidr4: '10.1.0.0/24', ipv4: { mode: 'Private' as const } };
    expect(podIpv4Mode({ ip4: '192.0.2.1' }, publicNode)).toBe('public');
    expect(podIpv4Mode({}, publicNode)).toBe('none');
    expect(podIpv4Mode({ ip4: '10.1.0.7' }, privateNode)).toBe('private');
    expect(podIpv4Mode({}, privateNode)).toBe('none');
    const nat64Node = {
      ...publicNode,
      nat64: { prefix: '64:ff9b::/96', pool: '192.168.240.0/20' },
    };
    expect(podIpv4Mode({}, nat64Node)).toBe('nat64');
    expect(podIpv4Mode({ ip4: '192.0.2.1' }, nat64Node)).toBe('public');
    // A pinned address lies outside the slice: it is public wherever the pod runs.
    expect(podIpv4Mode({ ip4: '198.51.100.5' }, privateNode)).toBe('public');
  });
});
