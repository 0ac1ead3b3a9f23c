import { describe, expect, it } from 'vitest';
import type { CniResult } from '@flock/api';
import {
  commandAllowed,
  isSupportedVersion,
  prevResultForAgent,
  resultForVersion,
} from './versions.js';

const result: CniResult = {
  cniVersion: '1.1.0',
  interfaces: [{ name: 'eth0', mac: '02:00:00:00:00:02', mtu: 9000, sandbox: '/run/netns/a' }],
  ips: [
    { address: '2001:db8::5/128', gateway: 'fe80::1', interface: 0 },
    { address: '192.0.2.5/32', interface: 0 },
  ],
  routes: [{ dst: '::/0', gw: 'fe80::1' }],
  dns: { nameservers: ['2001:db8::53'] },
};

describe('CNI versions', () => {
  it('knows which versions and which commands per version', () => {
    expect(['0.4.0', '1.0.0', '1.1.0'].every(isSupportedVersion)).toBe(true);
    for (const v of ['0.3.1', '1.2.0', '', 1, undefined]) expect(isSupportedVersion(v)).toBe(false);
    expect(commandAllowed('CHECK', '0.4.0')).toBe(true);
    expect(commandAllowed('STATUS', '1.0.0')).toBe(false);
    expect(commandAllowed('GC', '0.4.0')).toBe(false);
    expect(commandAllowed('GC', '1.1.0')).toBe(true);
  });

  it('keeps a 1.1.0 result as it is', () => {
    expect(resultForVersion(result, '1.1.0')).toEqual(result);
  });

  it('drops the interface MTU for 1.0.0 and tags IP versions for 0.4.0', () => {
    const v1 = resultForVersion(result, '1.0.0');
    expect(v1['cniVersion']).toBe('1.0.0');
    expect(v1['interfaces']).toEqual([
      { name: 'eth0', mac: '02:00:00:00:00:02', sandbox: '/run/netns/a' },
    ]);
    expect(v1['ips']).toEqual(result.ips);
    const v04 = resultForVersion(result, '0.4.0');
    expect(v04['ips']).toEqual([
      { version: '6', address: '2001:db8::5/128', gateway: 'fe80::1', interface: 0 },
      { version: '4', address: '192.0.2.5/32', interface: 0 },
    ]);
    expect(v04['routes']).toEqual(result.routes);
    expect(v04['dns']).toEqual(result.dns);
  });

  it('lifts a 0.4.0 prevResult to 1.1.0 and round-trips with resultForVersion', () => {
    const old = resultForVersion(result, '0.4.0');
    const lifted = prevResultForAgent(old);
    expect(lifted['cniVersion']).toBe('1.1.0');
    expect(lifted['ips']).toEqual(result.ips);
    expect(prevResultForAgent({ cniVersion: '1.0.0' })).toEqual({ cniVersion: '1.1.0' });
  });
});
