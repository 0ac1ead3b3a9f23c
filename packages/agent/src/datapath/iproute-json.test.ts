import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { readLines } from './commands.js';
import { failedBatchLines, parseReadBatch, parseRoutes, splitJsonValues } from './iproute-json.js';

// Outputs recorded from `ip -N -d -json -force -batch -` (iproute2 6.1, Linux 6.18) on a node
// and a pod wired the way the datapath wires them.
const fixture = (name: string) =>
  readFileSync(new URL(`./testdata/${name}`, import.meta.url), 'utf8');

describe('ip -json batch output', () => {
  it('reads a pod: links with addresses, its own routes, gateway neighbours', () => {
    const lines = readLines({ links: 'all', routes: 'all', neighbours: true });
    const s = parseReadBatch(lines, fixture('pod-read.json'), '');
    expect(s.links.map((l) => [l.name, l.ifindex, l.kind, l.up, l.mtu, l.peerIfindex])).toEqual([
      ['lo', 1, undefined, true, 65536, undefined],
      ['eth0', 2, 'veth', true, 1450, 2],
    ]);
    expect(s.links[1]?.mac).toBe('02:66:77:88:99:aa');
    expect(s.links[1]?.addresses).toEqual([
      { cidr: '192.0.2.5/32', family: 4, scope: 0, nodad: false },
      { cidr: '2001:db8:100::5/128', family: 6, scope: 0, nodad: true },
    ]);
    expect(s.links[0]?.addresses.map((a) => [a.cidr, a.scope])).toEqual([
      ['127.0.0.1/8', 254],
      ['198.51.100.7/32', 0],
      ['2001:db8:aaaa::1/128', 0],
      ['::1/128', 254],
    ]);
    // Local-table and proto-kernel routes are left out; "default" gets its family.
    expect(s.routes).toEqual([
      {
        dst: '0.0.0.0/0',
        family: 4,
        type: 'unicast',
        proto: 241,
        metric: 0,
        nexthops: [{ dev: 'eth0', gateway: '169.254.1.1' }],
      },
      {
        dst: '169.254.1.1/32',
        family: 4,
        type: 'unicast',
        proto: 241,
        metric: 0,
        nexthops: [{ dev: 'eth0' }],
      },
      {
        dst: '::/0',
        family: 6,
        type: 'unicast',
        proto: 241,
        metric: 1024,
        nexthops: [{ dev: 'eth0', gateway: 'fe80::1' }],
      },
    ]);
    expect(s.neighbours).toEqual([
      { dev: 'eth0', ip: '169.254.1.1', mac: '02:11:22:33:44:55', permanent: true },
      { dev: 'eth0', ip: 'fe80::1', mac: '02:11:22:33:44:55', permanent: true },
    ]);
  });

  it('treats a failed "address show dev X" as an absent link', () => {
    const lines = readLines({
      links: { names: ['flock1a2b3c4d', 'flocknothere'] },
      routes: { exact: ['2001:db8:100::5/128', '192.0.2.5/32'] },
    });
    const s = parseReadBatch(
      lines,
      fixture('host-pod-read.json'),
      fixture('host-pod-read.stderr.txt'),
    );
    expect(s.links.map((l) => l.name)).toEqual(['flock1a2b3c4d']);
    expect(s.links[0]?.addresses.map((a) => [a.cidr, a.scope, a.nodad])).toEqual([
      ['169.254.1.1/32', 254, false],
      ['fe80::1/64', 253, true],
    ]);
    expect(s.routes.map((r) => [r.dst, r.proto, r.nexthops])).toEqual([
      ['2001:db8:100::5/128', 241, [{ dev: 'flock1a2b3c4d' }]],
      ['192.0.2.5/32', 241, [{ dev: 'flock1a2b3c4d' }]],
    ]);
  });

  it('reads veths and flock routes, with the protocol that the filter leaves out', () => {
    const lines = readLines({ links: { kind: 'veth' }, routes: { protos: [241, 242] } });
    const s = parseReadBatch(lines, fixture('host-list-read.json'), '');
    expect(s.links.map((l) => [l.name, l.peerIfindex])).toEqual([
      ['flock1a2b3c4d', 2],
      ['flock5e6f7a8b', 2],
    ]);
    expect(s.routes.map((r) => [r.dst, r.type, r.proto, r.nexthops.length])).toEqual([
      ['192.0.2.0/26', 'blackhole', 241, 0],
      ['192.0.2.5/32', 'unicast', 241, 1],
      ['2001:db8:100::5/128', 'unicast', 241, 1],
      ['2001:db8:100::6/128', 'unicast', 241, 1],
      ['2001:db8:100::/64', 'blackhole', 241, 0],
      ['198.51.100.7/32', 'unicast', 242, 2],
      ['198.51.100.8/32', 'unicast', 242, 1],
      ['2001:db8:aaaa::1/128', 'unicast', 242, 2],
    ]);
    expect(s.routes.find((r) => r.dst === '2001:db8:aaaa::1/128')?.nexthops).toEqual([
      { dev: 'flock1a2b3c4d', gateway: '2001:db8:100::5' },
      { dev: 'flock5e6f7a8b', gateway: '2001:db8:100::6' },
    ]);
  });

  it('keeps main-table routes of every protocol but the kernel one', () => {
    const routes = parseRoutes(JSON.parse(fixture('host-all-routes.json')));
    expect(routes.map((r) => `${r.dst} ${r.proto}`)).toEqual([
      '192.0.2.0/26 241',
      '192.0.2.5/32 241',
      '198.51.100.7/32 242',
      '198.51.100.8/32 242',
      '2001:db8:100::5/128 241',
      '2001:db8:100::6/128 241',
      '2001:db8:100::/64 241',
      '2001:db8:aaaa::1/128 242',
    ]);
    // Without -N and without a protocol, a route is the kernel's "boot" (3).
    expect(
      parseRoutes([{ dst: 'default', dev: 'eth0', pref: 'medium', metric: 1024, flags: [] }]),
    ).toEqual([
      {
        dst: '::/0',
        family: 6,
        type: 'unicast',
        proto: 3,
        metric: 1024,
        nexthops: [{ dev: 'eth0' }],
      },
    ]);
  });

  it('splits concatenated JSON values and refuses garbage', () => {
    expect(splitJsonValues('[{"a":"]["}]\n[]\n[{"b":"\\"]"}]')).toEqual([
      '[{"a":"]["}]',
      '[]',
      '[{"b":"\\"]"}]',
    ]);
    expect(() => splitJsonValues('[] x []')).toThrow(/unexpected/);
    expect(() => splitJsonValues('[{"a":1}')).toThrow(/truncated/);
    expect(
      failedBatchLines('Device "x" does not exist.\nCommand failed -:2\nCommand failed -:5\n'),
    ).toEqual(new Set([2, 5]));
  });

  it('refuses output that does not line up with the batch', () => {
    const lines = readLines({ links: 'all', routes: 'all' });
    expect(() => parseReadBatch(lines, '[]', '')).toThrow(/1 JSON values for 2/);
    expect(() => parseReadBatch(lines, '[]', 'Command failed -:2')).toThrow(/line 2 .* failed/);
    expect(() => parseReadBatch(readLines({ links: 'all' }), '[{"ifname":"x"}]', '')).toThrow();
  });
});
