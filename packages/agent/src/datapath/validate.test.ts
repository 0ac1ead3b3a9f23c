import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { actionTokens, assertSafeToken } from './commands.js';
import { freshHostActions, freshPodActions } from './plan.js';
import { DatapathError, type PodSpec } from './types.js';
import { validatePod, validateTeardown, validCidr } from './validate.js';

const pod: PodSpec = {
  containerID: 'abc123',
  ifName: 'eth0',
  netns: '/var/run/netns/cni-1234',
  hostVeth: 'flock12345678',
  ip6: '2001:db8:100::5',
  ip4: '192.0.2.5',
};

function refused(spec: PodSpec): string {
  try {
    validatePod(spec);
  } catch (e) {
    expect(e).toBeInstanceOf(DatapathError);
    expect((e as DatapathError).step).toBe('validate');
    return (e as Error).message;
  }
  throw new Error(`accepted ${JSON.stringify(spec)}`);
}

describe('validatePod', () => {
  it('accepts a pod and writes addresses the way the kernel prints them', () => {
    const v = validatePod({
      ...pod,
      ip6: '2001:DB8:100:0:0:0:0:A',
      anycast: ['2001:db8:aaaa:0::1', '198.51.100.7', '2001:db8:aaaa::1'],
    });
    expect(v.ip6).toBe('2001:db8:100::a');
    expect(v.anycast).toEqual([
      { ip: '198.51.100.7', family: 4 },
      { ip: '2001:db8:aaaa::1', family: 6 },
    ]);
    expect(validatePod({ ...pod, netns: '/proc/4242/ns/net' }).netns).toBe('/proc/4242/ns/net');
  });

  it('refuses shell metacharacters and oversized names', () => {
    for (const ifName of [
      'eth0;reboot',
      '$(id)',
      'eth 0',
      'eth0\n',
      'a'.repeat(16),
      '',
      '..',
      'lo',
    ])
      refused({ ...pod, ifName });
    for (const hostVeth of ['flock;rm', 'veth123', 'flock', 'flock`x`', 'flock123456789abc'])
      refused({ ...pod, hostVeth });
    for (const containerID of ['-rf', 'a b', 'a/b', '../x', '']) refused({ ...pod, containerID });
  });

  it('refuses netns path tricks', () => {
    for (const netns of [
      'relative/path',
      '/proc/../etc/passwd',
      '/run/netns/a b',
      '/run/netns/x;y',
      '/a/$(id)',
      '/a\nb',
    ])
      refused({ ...pod, netns });
  });

  it('refuses addresses a pod cannot use, and the wrong family', () => {
    expect(refused({ ...pod, ip6: '192.0.2.1' })).toMatch(/IPv6/);
    expect(refused({ ...pod, ip4: '2001:db8::1' })).toMatch(/IPv4/);
    for (const ip6 of [
      '::',
      '::1',
      'fe80::5',
      'ff02::1',
      '::ffff:192.0.2.1',
      'fe80::1%eth0',
      '2001:db8::/64',
      'x',
    ])
      refused({ ...pod, ip6 });
    for (const ip4 of [
      '0.0.0.0',
      '127.0.0.1',
      '169.254.1.1',
      '224.0.0.1',
      '255.255.255.255',
      '010.1.2.3',
    ])
      refused({ ...pod, ip4 });
    refused({ ...pod, anycast: ['fe80::1'] });
  });

  it('refuses an MTU IPv6 cannot live with', () => {
    for (const mtu of [1279, 65536, 1500.5, NaN]) refused({ ...pod, mtu });
    expect(validatePod({ ...pod, mtu: 9000 }).mtu).toBe(9000);
  });

  it('never lets an unsafe token through, whatever the input', () => {
    const text = fc.oneof(
      fc.string(),
      fc.constantFrom('eth0', 'flock12345678', '/run/netns/x', '2001:db8::1', '192.0.2.9'),
    );
    fc.assert(
      fc.property(text, text, text, text, text, (ifName, netns, hostVeth, ip6, ip4) => {
        let v;
        try {
          v = validatePod({ containerID: 'c', ifName, netns, hostVeth, ip6, ip4 });
        } catch (e) {
          expect(e).toBeInstanceOf(DatapathError);
          return;
        }
        const macs = { hostMac: '02:00:00:00:00:01', podMac: '02:00:00:00:00:02' };
        for (const a of [...freshHostActions(v, macs), ...freshPodActions(v, macs.hostMac)])
          for (const token of actionTokens(a)) expect(() => assertSafeToken(token)).not.toThrow();
      }),
      { numRuns: 500 },
    );
  });
});

describe('validateTeardown and validCidr', () => {
  it('accepts a teardown without netns or addresses', () => {
    expect(
      validateTeardown({ containerID: 'c', ifName: 'eth0', hostVeth: 'flock00000000' }),
    ).toEqual({
      containerID: 'c',
      ifName: 'eth0',
      hostVeth: 'flock00000000',
      anycast: [],
    });
    expect(() => validateTeardown({ containerID: 'c', ifName: 'eth0', hostVeth: 'eth0' })).toThrow(
      DatapathError,
    );
  });

  it('normalises network CIDRs and refuses host bits', () => {
    expect(validCidr('2001:DB8:100:0::/64', 'blackhole')).toBe('2001:db8:100::/64');
    expect(() => validCidr('192.0.2.1/24', 'blackhole')).toThrow(/host bits/);
    expect(() => validCidr('192.0.2.0/24 proto 1', 'blackhole')).toThrow(DatapathError);
  });
});
