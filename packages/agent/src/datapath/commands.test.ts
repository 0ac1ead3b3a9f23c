import { describe, expect, it } from 'vitest';
import { actionTokens, batchText, ipCommand, readLines, sysctlCommand } from './commands.js';
import { HOST, podNs } from './model.js';
import { freshHostActions, freshPodActions } from './plan.js';
import { validatePod } from './validate.js';

const pod = validatePod({
  containerID: 'abc',
  ifName: 'eth0',
  netns: '/var/run/netns/cni-1',
  hostVeth: 'flock1a2b3c4d',
  ip6: '2001:db8:100::5',
  ip4: '192.0.2.5',
  anycast: ['2001:db8:aaaa::1', '198.51.100.7'],
  mtu: 1450,
});
const macs = { hostMac: '02:11:22:33:44:55', podMac: '02:66:77:88:99:aa' };
const lines = (actions: Parameters<typeof actionTokens>[0][]) =>
  actions.map((a) => actionTokens(a).join(' '));

describe('command builders', () => {
  it('builds the host batch of a new pod', () => {
    expect(lines(freshHostActions(pod, macs))).toEqual([
      'link add flock1a2b3c4d address 02:11:22:33:44:55 mtu 1450 type veth peer name eth0 address 02:66:77:88:99:aa mtu 1450 netns /var/run/netns/cni-1',
      'link set dev flock1a2b3c4d addrgenmode none',
      'link set dev flock1a2b3c4d up',
      'address replace fe80::1/64 dev flock1a2b3c4d nodad',
      'address replace 169.254.1.1/32 dev flock1a2b3c4d scope host',
      'route replace 2001:db8:100::5/128 dev flock1a2b3c4d proto 241',
      'route replace 192.0.2.5/32 dev flock1a2b3c4d proto 241',
    ]);
  });

  it('builds the pod batch of a new pod', () => {
    expect(lines(freshPodActions(pod, macs.hostMac))).toEqual([
      'link set dev lo up',
      'link set dev eth0 addrgenmode none',
      'link set dev eth0 up',
      'address replace 2001:db8:100::5/128 dev eth0 nodad',
      'address replace 192.0.2.5/32 dev eth0',
      'neigh replace fe80::1 lladdr 02:11:22:33:44:55 dev eth0 nud permanent',
      'neigh replace 169.254.1.1 lladdr 02:11:22:33:44:55 dev eth0 nud permanent',
      'route replace ::/0 via fe80::1 dev eth0 proto 241',
      'route replace 169.254.1.1/32 dev eth0 proto 241',
      'route replace 0.0.0.0/0 via 169.254.1.1 dev eth0 proto 241',
      'address replace 198.51.100.7/32 dev lo',
      'address replace 2001:db8:aaaa::1/128 dev lo',
    ]);
  });

  it('gives an IPv6-only pod no IPv4 routes, unless it serves IPv4 anycast', () => {
    const v6 = validatePod({
      containerID: 'abc',
      ifName: 'eth0',
      netns: '/run/netns/x',
      hostVeth: 'flockx',
      ip6: '2001:db8::5',
    });
    expect(lines(freshPodActions(v6, macs.hostMac)).filter((l) => l.includes('169.254'))).toEqual(
      [],
    );
    const any4 = validatePod({ ...v6, anycast: ['198.51.100.9'] });
    expect(lines(freshPodActions(any4, macs.hostMac)).filter((l) => l.startsWith('route'))).toEqual(
      [
        'route replace ::/0 via fe80::1 dev eth0 proto 241',
        'route replace 169.254.1.1/32 dev eth0 proto 241',
        'route replace 0.0.0.0/0 via 169.254.1.1 dev eth0 proto 241',
      ],
    );
  });

  it('builds multipath, blackhole and delete routes', () => {
    const step = 'anycast-route' as const;
    expect(
      actionTokens({
        op: 'route-replace',
        step,
        route: {
          dst: '2001:db8:aaaa::1/128',
          type: 'unicast',
          proto: 242,
          nexthops: [
            { dev: 'flocka', gateway: '2001:db8:100::5' },
            { dev: 'flockb', gateway: '2001:db8:100::6' },
          ],
        },
      }),
    ).toEqual([
      'route',
      'replace',
      '2001:db8:aaaa::1/128',
      'proto',
      '242',
      'nexthop',
      'via',
      '2001:db8:100::5',
      'dev',
      'flocka',
      'nexthop',
      'via',
      '2001:db8:100::6',
      'dev',
      'flockb',
    ]);
    expect(
      actionTokens({
        op: 'route-replace',
        step,
        route: {
          dst: '198.51.100.7/32',
          type: 'unicast',
          proto: 242,
          nexthops: [{ dev: 'flocka' }],
        },
      }),
    ).toEqual(['route', 'replace', '198.51.100.7/32', 'dev', 'flocka', 'proto', '242']);
    const blackhole = {
      dst: '2001:db8:100::/64',
      type: 'blackhole' as const,
      proto: 241,
      nexthops: [],
    };
    expect(actionTokens({ op: 'route-replace', step: 'blackholes', route: blackhole })).toEqual([
      'route',
      'replace',
      'blackhole',
      '2001:db8:100::/64',
      'proto',
      '241',
    ]);
    expect(actionTokens({ op: 'route-del', step: 'blackholes', route: blackhole })).toEqual([
      'route',
      'del',
      'blackhole',
      '2001:db8:100::/64',
      'proto',
      '241',
    ]);
    expect(actionTokens({ op: 'link-del', step: 'delete-veth', name: 'flocka' })).toEqual([
      'link',
      'del',
      'dev',
      'flocka',
    ]);
    expect(
      actionTokens({ op: 'addr-del', step: 'pod-anycast', dev: 'lo', cidr: '198.51.100.7/32' }),
    ).toEqual(['address', 'del', '198.51.100.7/32', 'dev', 'lo']);
  });

  it('reads only what the query asks for', () => {
    expect(
      readLines({
        links: { names: ['flocka'] },
        routes: { protos: [241, 242], exact: ['192.0.2.5/32'] },
        neighbours: true,
      }),
    ).toEqual([
      { tokens: ['address', 'show', 'dev', 'flocka'], mayFail: true },
      { tokens: ['route', 'show', 'table', 'all', 'proto', '241'], impliedProto: 241 },
      { tokens: ['route', 'show', 'table', 'all', 'proto', '242'], impliedProto: 242 },
      { tokens: ['route', 'show', 'table', 'all', 'to', 'exact', '192.0.2.5/32'] },
      { tokens: ['neigh', 'show'] },
    ]);
    expect(readLines({ links: 'all', routes: 'all' })).toEqual([
      { tokens: ['address', 'show'] },
      { tokens: ['route', 'show', 'table', 'all'] },
    ]);
    expect(readLines({ links: { kind: 'veth' } })).toEqual([
      { tokens: ['address', 'show', 'type', 'veth'] },
    ]);
  });

  it('runs ip in the right namespace', () => {
    expect(ipCommand(HOST, undefined, ['-batch', '-'])).toEqual({
      file: 'ip',
      args: ['-batch', '-'],
    });
    expect(ipCommand(HOST, '/run/netns/node', ['-batch', '-'])).toEqual({
      file: 'nsenter',
      args: ['--net=/run/netns/node', 'ip', '-batch', '-'],
    });
    expect(ipCommand(podNs('/proc/42/ns/net'), '/run/netns/node', ['-batch', '-'])).toEqual({
      file: 'nsenter',
      args: ['--net=/proc/42/ns/net', 'ip', '-batch', '-'],
    });
    expect(sysctlCommand('/run/netns/node', 'net.ipv4.ip_forward', '1')).toEqual({
      file: 'nsenter',
      args: ['--net=/run/netns/node', 'sysctl', '-w', 'net.ipv4.ip_forward=1'],
    });
  });

  it('refuses a token that could split or comment an ip batch line', () => {
    expect(batchText([['link', 'set', 'dev', 'lo', 'up']])).toBe('link set dev lo up\n');
    for (const bad of ['a b', 'a\nroute del default', '#', '"x"', "'x'", 'a\\b', '', 'x;y'])
      expect(() => batchText([['link', 'del', bad]])).toThrow(/unsafe token/);
  });
});
