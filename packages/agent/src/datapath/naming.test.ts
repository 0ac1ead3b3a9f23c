import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { hostVethName, vethMacs } from './naming.js';

describe('hostVethName', () => {
  it('is flock + 8 hex digits of sha256("<containerID>/<ifName>")', () => {
    // Pinned: veths made by running agents carry these names; a change strands them.
    expect(hostVethName('contract-a', 'eth0')).toBe('flockd2546335');
    expect(hostVethName('contract-b', 'eth0')).toBe('flock9bad92e8');
  });

  it('fits the kernel limit and depends on the interface name too', () => {
    fc.assert(
      fc.property(fc.stringMatching(/^[a-z0-9]{1,64}$/), (id) => {
        const name = hostVethName(id, 'eth0');
        expect(name).toMatch(/^flock[0-9a-f]{8}$/);
        expect(name.length).toBeLessThanOrEqual(15);
        expect(hostVethName(id, 'net1')).not.toBe(name);
      }),
    );
  });

  it('gives the same names once its cache has filled and been cleared', () => {
    const first = Array.from({ length: 5000 }, (_, i) => hostVethName(`c${i}`, 'eth0'));
    expect(new Set(first).size).toBeGreaterThan(4990); // 32-bit names: a few may collide
    expect(Array.from({ length: 5000 }, (_, i) => hostVethName(`c${i}`, 'eth0'))).toEqual(first);
    expect(hostVethName('contract-a', 'eth0')).toBe('flockd2546335');
  });
});

describe('vethMacs', () => {
  it('derives stable, locally administered unicast MACs, different for both ends', () => {
    expect(vethMacs('contract-a', 'eth0')).toEqual({
      hostMac: 'a2:0e:89:a1:fc:89',
      podMac: '9a:20:2d:9a:f5:25',
    });
    fc.assert(
      fc.property(fc.string({ minLength: 1, maxLength: 40 }), (id) => {
        const { hostMac, podMac } = vethMacs(id, 'eth0');
        for (const mac of [hostMac, podMac]) {
          expect(mac).toMatch(/^([0-9a-f]{2}:){5}[0-9a-f]{2}$/);
          const first = parseInt(mac.slice(0, 2), 16);
          expect(first & 0x01).toBe(0); // unicast
          expect(first & 0x02).toBe(2); // locally administered
        }
        expect(hostMac).not.toBe(podMac);
      }),
    );
  });
});
