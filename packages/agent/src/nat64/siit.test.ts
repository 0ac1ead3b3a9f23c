import { nodeConfig } from '@flock/api/testing';
import { describe, expect, it } from 'vitest';
import { halves, interNodeOf, siitCommands, siitConfig, translatedRange } from './siit.js';

const PREFIX = 'fd12:3456:789a:4::/96';
const privateSpec = nodeConfig({
  spec: {
    cidr4: '10.20.3.0/24',
    ipv4: {
      assign: 'Always',
      mode: 'Private',
      clusterCIDRs: ['10.20.0.0/16'],
      interNodePrefix: PREFIX,
    },
  },
}).spec;

describe('the inter-node translator of private IPv4', () => {
  it('runs on a Private node with a translation prefix only', () => {
    expect(interNodeOf(privateSpec)).toEqual({
      prefix: PREFIX,
      slice: '10.20.3.0/24',
      clusterCIDRs: ['10.20.0.0/16'],
    });
    const noPrefix = { ...privateSpec, ipv4: { ...privateSpec.ipv4!, interNodePrefix: undefined } };
    expect(interNodeOf(noPrefix)).toBeUndefined();
    expect(interNodeOf(nodeConfig({ spec: { cidr4: '192.0.2.16/28' } }).spec)).toBeUndefined();
    expect(interNodeOf(undefined)).toBeUndefined();
  });

  it('maps an IPv4 range into the prefix (RFC 6052 /96: the address is the last 32 bits)', () => {
    expect(translatedRange(PREFIX, '10.20.3.0/24')).toBe('fd12:3456:789a:4::a14:300/120');
    expect(translatedRange(PREFIX, '10.20.0.0/16')).toBe('fd12:3456:789a:4::a14:0/112');
    expect(() => translatedRange('fd12::/64', '10.20.3.0/24')).toThrow(/no translation/);
    expect(() => translatedRange(PREFIX, '2001:db8::/64')).toThrow(/no translation/);
  });

  it('halves an IPv4 range (and refuses what is none)', () => {
    expect(halves('10.0.0.0/8')).toEqual(['10.0.0.0/9', '10.128.0.0/9']);
    expect(halves('192.168.1.4/30')).toEqual(['192.168.1.4/31', '192.168.1.6/31']);
    expect(() => halves('10.0.0.1/32')).toThrow(/no IPv4 range/);
    expect(() => halves('2001:db8::/64')).toThrow(/no IPv4 range/);
  });

  it('configures Tayga statelessly (no dynamic pool) and routes the range in, the slice back', () => {
    const want = interNodeOf(privateSpec)!;
    const text = siitConfig(want);
    expect(text).toContain('tun-device flock46\n');
    expect(text).toContain(`prefix ${PREFIX}\n`);
    expect(text).not.toContain('dynamic-pool');
    expect(siitCommands(want, '/c/siit.conf', '/usr/sbin/tayga')).toEqual([
      ['/usr/sbin/tayga', ['--mktun', '-c', '/c/siit.conf']],
      ['ip', ['link', 'set', 'flock46', 'up']],
      // Halves: more specific than the range's blackhole, the fallback without the device.
      ['ip', ['route', 'replace', '10.20.0.0/17', 'dev', 'flock46']],
      ['ip', ['route', 'replace', '10.20.128.0/17', 'dev', 'flock46']],
      ['ip', ['-6', 'route', 'replace', 'fd12:3456:789a:4::a14:300/120', 'dev', 'flock46']],
    ]);
    // Another range is another configuration: the device is made afresh, no stale route stays.
    expect(siitConfig({ ...want, clusterCIDRs: ['10.30.0.0/16'] })).not.toBe(text);
  });
});
