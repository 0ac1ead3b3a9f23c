import { describe, expect, it } from 'vitest';
import { actionTokens } from './commands.js';
import type { NsLink, NsState } from './model.js';
import { diffHost, diffPod, isPair } from './plan.js';
import { validatePod } from './validate.js';

const pod = validatePod({
  containerID: 'abc',
  ifName: 'eth0',
  netns: '/run/netns/p',
  hostVeth: 'flockaaaa',
  ip6: '2001:db8:100::5',
  ip4: '192.0.2.5',
  anycast: ['2001:db8:aaaa::1'],
});
const hostMac = '02:00:00:00:00:01';
const addr = (cidr: string, scope = 0) => ({
  cidr,
  family: cidr.includes(':') ? (6 as const) : (4 as const),
  scope,
  nodad: cidr.includes(':'),
});
const link = (name: string, ifindex: number, over: Partial<NsLink> = {}): NsLink => ({
  name,
  ifindex,
  kind: 'veth',
  mac: '02:00:00:00:00:02',
  up: true,
  mtu: 1500,
  peerIfindex: 7,
  addresses: [],
  ...over,
});
const route = (dst: string, dev: string, gateway?: string, proto = 241) => ({
  dst,
  family: dst.includes(':') ? (6 as const) : (4 as const),
  type: 'unicast' as const,
  proto,
  metric: dst.includes(':') ? 1024 : 0,
  nexthops: [{ dev, ...(gateway ? { gateway } : {}) }],
});

/** A pod namespace exactly as the datapath leaves it. */
function goodPod(): NsState {
  return {
    links: [
      link('lo', 1, {
        kind: undefined,
        peerIfindex: undefined,
        addresses: [addr('127.0.0.1/8', 254), addr('2001:db8:aaaa::1/128')],
      }),
      link('eth0', 2, { addresses: [addr('192.0.2.5/32'), addr('2001:db8:100::5/128')] }),
    ],
    routes: [
      route('::/0', 'eth0', 'fe80::1'),
      route('169.254.1.1/32', 'eth0'),
      route('0.0.0.0/0', 'eth0', '169.254.1.1'),
    ],
    neighbours: [
      { dev: 'eth0', ip: 'fe80::1', mac: hostMac, permanent: true },
      { dev: 'eth0', ip: '169.254.1.1', mac: hostMac, permanent: true },
    ],
  };
}

function goodHost(): NsState {
  return {
    links: [
      link('flockaaaa', 7, {
        mac: hostMac,
        peerIfindex: 2,
        addresses: [addr('169.254.1.1/32', 254), addr('fe80::1/64', 253)],
      }),
    ],
    routes: [route('2001:db8:100::5/128', 'flockaaaa'), route('192.0.2.5/32', 'flockaaaa')],
    neighbours: [],
  };
}

const fixes = (d: { actions: Parameters<typeof actionTokens>[0][] }) =>
  d.actions.map((a) => actionTokens(a).join(' '));

describe('diffPod / diffHost', () => {
  it('finds nothing on a correctly wired pod', () => {
    expect(diffPod(pod, goodPod(), hostMac)).toEqual({ findings: [], actions: [] });
    expect(diffHost(pod, goodHost(), hostMac)).toEqual({ findings: [], actions: [] });
    expect(isPair(goodHost().links[0], goodPod().links[1])).toBe(true);
    expect(isPair(goodHost().links[0], link('eth0', 3))).toBe(false);
  });

  it('adds the right IPv4 address before removing a wrong one (the last one would flush routes)', () => {
    const s = goodPod();
    const eth = s.links[1] as NsLink;
    eth.addresses = [addr('192.0.2.99/32'), addr('2001:db8:100::5/64')];
    const d = diffPod(pod, s, hostMac);
    expect(d.findings.map((f) => `${f.kind} ${f.object}`)).toEqual([
      'pod-address-missing 2001:db8:100::5/128',
      'pod-address-missing 192.0.2.5/32',
      'pod-address-unexpected 192.0.2.99/32',
      'pod-address-unexpected 2001:db8:100::5/64',
    ]);
    expect(fixes(d)).toEqual([
      'address del 2001:db8:100::5/64 dev eth0',
      'address replace 2001:db8:100::5/128 dev eth0 nodad',
      'address replace 192.0.2.5/32 dev eth0',
      'address del 192.0.2.99/32 dev eth0',
    ]);
  });

  it('repairs gateways, routes and anycast in kernel order (link, addresses, neighbours, routes)', () => {
    const s = goodPod();
    s.neighbours = [{ dev: 'eth0', ip: 'fe80::1', mac: '02:99:99:99:99:99', permanent: false }];
    s.routes = [route('::/0', 'eth0', 'fe80::99', 3)];
    (s.links[0] as NsLink).addresses = [];
    (s.links[1] as NsLink).up = false;
    const d = diffPod(pod, s, hostMac);
    expect(d.findings.map((f) => f.kind)).toEqual([
      'pod-interface-down',
      'pod-neighbour-wrong',
      'pod-neighbour-missing',
      'pod-route-wrong',
      'pod-route-missing',
      'pod-route-missing',
      'pod-anycast-missing',
    ]);
    expect(fixes(d)).toEqual([
      'link set dev eth0 up',
      `neigh replace fe80::1 lladdr ${hostMac} dev eth0 nud permanent`,
      `neigh replace 169.254.1.1 lladdr ${hostMac} dev eth0 nud permanent`,
      'route replace ::/0 via fe80::1 dev eth0 proto 241',
      'route replace 169.254.1.1/32 dev eth0 proto 241',
      'route replace 0.0.0.0/0 via 169.254.1.1 dev eth0 proto 241',
      'address replace 2001:db8:aaaa::1/128 dev lo',
    ]);
  });

  it('reports a missing interface and stops there', () => {
    const s = goodPod();
    s.links = s.links.filter((l) => l.name !== 'eth0');
    expect(diffPod(pod, s, hostMac).findings.map((f) => f.kind)).toEqual(['pod-interface-missing']);
  });

  it('repairs the host side: link up, gateways, routes through the right veth', () => {
    const h = goodHost();
    const veth = h.links[0] as NsLink;
    veth.up = false;
    veth.addresses = [addr('169.254.1.1/32', 254)];
    h.routes = [route('192.0.2.5/32', 'flockbbbb')];
    const d = diffHost({ ...pod, mtu: 1400 }, h, hostMac);
    expect(d.findings.map((f) => `${f.kind} ${f.object}`)).toEqual([
      'host-veth-down flockaaaa',
      'host-mtu-wrong flockaaaa',
      'host-address-missing fe80::1/64',
      'host-route-missing 2001:db8:100::5/128',
      'host-route-wrong 192.0.2.5/32',
    ]);
    expect(fixes(d)).toEqual([
      'link set dev flockaaaa up',
      'link set dev flockaaaa mtu 1400',
      'address replace fe80::1/64 dev flockaaaa nodad',
      'route replace 2001:db8:100::5/128 dev flockaaaa proto 241',
      'route replace 192.0.2.5/32 dev flockaaaa proto 241',
    ]);
    expect(
      diffHost(pod, { links: [], routes: [], neighbours: [] }, hostMac).findings.map((f) => f.kind),
    ).toEqual(['host-veth-missing']);
  });
});
