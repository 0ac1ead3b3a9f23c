import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import { requireKernelTier, type Netns } from '@flock/testkit';
import { hostVethName } from './naming.js';
import { KernelHarness } from '../../testing/datapath/harness.js';
import {
  echoServer,
  ipJson,
  pingOnce,
  recordingRunner,
  tcpExchange,
} from '../../testing/datapath/probes.js';
import { DatapathError, type PodSpec } from './types.js';

interface Addr {
  family: string;
  local: string;
  prefixlen: number;
  nodad?: boolean;
  tentative?: boolean;
}
interface Link {
  ifname: string;
  address: string;
  flags: string[];
  addr_info: Addr[];
}
interface Route {
  dst: string;
  gateway?: string;
  dev?: string;
  protocol?: string;
}

const addresses = (links: Link[]) =>
  links[0]?.addr_info.map((a) => `${a.local}/${a.prefixlen}`).sort();

describe('IprouteDatapath pods (kernel)', () => {
  beforeAll(() => requireKernelTier('nsenter', 'ping', 'socat'));
  let h: KernelHarness | undefined;
  afterEach(async () => {
    await h?.destroy();
    h = undefined;
  });

  async function podIn(harness: KernelHarness, id: string, n: number, over: Partial<PodSpec> = {}) {
    const ns = await harness.newPod();
    const spec: PodSpec = {
      containerID: id,
      ifName: 'eth0',
      netns: ns.path,
      hostVeth: hostVethName(id, 'eth0'),
      ip6: `2001:db8:100::${n}`,
      ip4: `192.0.2.${n}`,
      ...over,
    };
    return { ns, spec };
  }

  it('wires a pod with two processes: addresses, gateways and routes on both sides', async () => {
    const rec = recordingRunner();
    h = await KernelHarness.create(rec.runner);
    const { ns, spec } = await podIn(h, 'k-wire', 10, {
      anycast: ['2001:db8:aaaa::1', '198.51.100.7'],
      mtu: 1400,
    });
    const res = await h.datapath.setupPod(spec);
    // One `ip` per side (the harness reaches the host veth's sysctls through `sysctl`).
    expect(rec.calls.map((c) => c.args.slice(0, 2)).filter(([, f]) => f === 'ip')).toEqual([
      [`--net=${h.node.path}`, 'ip'],
      [`--net=${ns.path}`, 'ip'],
    ]);
    // The host veth takes no router advertisement nor redirect from the pod.
    for (const key of [
      `net.ipv6.conf.${spec.hostVeth}.accept_ra`,
      `net.ipv6.conf.${spec.hostVeth}.accept_redirects`,
      `net.ipv4.conf.${spec.hostVeth}.accept_redirects`,
    ])
      expect((await h.node.exec('sysctl', ['-n', key])).stdout.trim(), key).toBe('0');

    const eth0 = await ipJson<Link[]>(ns, ['address', 'show', 'dev', 'eth0']);
    expect(eth0[0]?.address).toBe(res.podMac);
    expect(eth0[0]?.flags).toContain('UP');
    // No kernel link-local, nothing tentative: nothing waits for DAD.
    expect(addresses(eth0)).toEqual(['192.0.2.10/32', '2001:db8:100::10/128']);
    expect(eth0[0]?.addr_info.some((a) => a.tentative)).toBe(false);
    expect(eth0[0]?.addr_info.find((a) => a.family === 'inet6')?.nodad).toBe(true);
    expect(addresses(await ipJson<Link[]>(ns, ['address', 'show', 'dev', 'lo']))).toEqual(
      ['127.0.0.1/8', '198.51.100.7/32', '2001:db8:aaaa::1/128', '::1/128'].sort(),
    );
    const v6 = await ipJson<Route[]>(ns, ['-6', 'route', 'show', 'default']);
    expect(v6.map((r) => [r.gateway, r.dev, r.protocol])).toEqual([['fe80::1', 'eth0', '241']]);
    const v4 = await ipJson<Route[]>(ns, ['-4', 'route', 'show']);
    expect(v4.map((r) => `${r.dst} ${r.gateway ?? ''} ${r.dev ?? ''}`)).toEqual([
      'default 169.254.1.1 eth0',
      '169.254.1.1  eth0',
    ]);
    const neigh = await ipJson<{ dst: string; lladdr: string; state: string[] }[]>(ns, [
      'neigh',
      'show',
      'dev',
      'eth0',
    ]);
    expect(neigh.map((n) => [n.dst, n.lladdr, n.state]).sort()).toEqual([
      ['169.254.1.1', res.hostMac, ['PERMANENT']],
      ['fe80::1', res.hostMac, ['PERMANENT']],
    ]);

    const veth = await ipJson<(Link & { mtu: number })[]>(h.node, [
      'address',
      'show',
      'dev',
      spec.hostVeth,
    ]);
    expect(veth[0]?.address).toBe(res.hostMac);
    expect(veth[0]?.mtu).toBe(1400);
    expect(addresses(veth)).toEqual(['169.254.1.1/32', 'fe80::1/64']);
    const hostRoutes = await ipJson<Route[]>(h.node, [
      'route',
      'show',
      'table',
      'all',
      'proto',
      '241',
    ]);
    expect(hostRoutes.map((r) => `${r.dst} ${r.dev ?? ''}`).sort()).toEqual([
      `192.0.2.10 ${spec.hostVeth}`,
      `2001:db8:100::10 ${spec.hostVeth}`,
    ]);
    // The node answers pods from its own address, never from the gateway address.
    const get = await ipJson<{ prefsrc: string }[]>(h.node, ['route', 'get', '192.0.2.10']);
    expect(get[0]?.prefsrc).toBe('10.255.0.1');
  });

  it('carries ping and TCP at once: node ↔ pod and pod → pod, IPv6 and IPv4', async () => {
    h = await KernelHarness.create();
    const a = await podIn(h, 'k-a', 11);
    const b = await podIn(h, 'k-b', 12);
    // Servers listen before the pods are wired: the first connection follows setupPod directly.
    echoServer(a.ns, 7000);
    echoServer(b.ns, 7000);
    echoServer(h.node, 7000);
    await h.datapath.setupPod(a.spec);
    await h.datapath.setupPod(b.spec);
    const pings: [Netns, string][] = [
      [h.node, '2001:db8:100::11'],
      [h.node, '192.0.2.11'],
      [a.ns, '2001:db8:ffff::1'],
      [a.ns, '10.255.0.1'],
      [a.ns, '2001:db8:100::12'],
      [a.ns, '192.0.2.12'],
    ];
    for (const [from, to] of pings) expect(await pingOnce(from, to), `ping ${to}`).toBe(true);
    const tcp: [Netns, string][] = [
      [h.node, '2001:db8:100::11'],
      [h.node, '192.0.2.11'],
      [a.ns, '2001:db8:ffff::1'],
      [a.ns, '10.255.0.1'],
      [a.ns, '2001:db8:100::12'],
      [a.ns, '192.0.2.12'],
      [b.ns, '2001:db8:100::11'],
    ];
    for (const [from, to] of tcp)
      expect(await tcpExchange(from, to, 7000, `hello ${to}\n`)).toBe(`hello ${to}\n`);
  });

  it('does nothing the second time, and repairs wrong objects', async () => {
    const rec = recordingRunner();
    h = await KernelHarness.create(rec.runner);
    const a = await podIn(h, 'k-idem', 13);
    const b = await podIn(h, 'k-other', 14);
    const first = await h.datapath.setupPod(a.spec);
    await h.datapath.setupPod(b.spec);
    rec.calls.length = 0;
    expect(await h.datapath.setupPod(a.spec)).toEqual({ ...first, created: false });
    // The refused `link add` (it exists), then one read per side: nothing written.
    expect(rec.writes().map((c) => c.input.split(' ').slice(0, 2).join(' '))).toEqual(['link add']);
    expect(rec.calls).toHaveLength(3);

    await a.ns.exec('ip', ['address', 'add', '2001:db8:100::99/128', 'dev', 'eth0', 'nodad']);
    await a.ns.exec('ip', ['-6', 'route', 'del', 'default']);
    await h.node.exec('ip', [
      'route',
      'replace',
      '192.0.2.13/32',
      'dev',
      b.spec.hostVeth,
      'proto',
      '241',
    ]);
    expect((await h.datapath.checkPod(a.spec)).map((f) => `${f.kind} ${f.object}`).sort()).toEqual([
      'host-route-wrong 192.0.2.13/32',
      'pod-address-unexpected 2001:db8:100::99/128',
      'pod-route-missing ::/0',
    ]);
    expect((await h.datapath.setupPod(a.spec)).created).toBe(false);
    expect(await h.datapath.checkPod(a.spec)).toEqual([]);
    expect(addresses(await ipJson<Link[]>(a.ns, ['address', 'show', 'dev', 'eth0']))).toEqual([
      '192.0.2.13/32',
      '2001:db8:100::13/128',
    ]);
    expect(await pingOnce(h.node, '192.0.2.13')).toBe(true);
    expect(await pingOnce(a.ns, '2001:db8:ffff::1')).toBe(true);
  });

  it('reports a deleted route, a downed veth and a vanished namespace', async () => {
    h = await KernelHarness.create();
    const a = await podIn(h, 'k-check', 15);
    await h.datapath.setupPod(a.spec);
    await h.node.exec('ip', ['-6', 'route', 'del', '2001:db8:100::15/128']);
    expect((await h.datapath.checkPod(a.spec)).map((f) => `${f.kind} ${f.object}`)).toEqual([
      'host-route-missing 2001:db8:100::15/128',
    ]);
    await a.ns.exec('ip', ['link', 'set', 'eth0', 'down']);
    expect((await h.datapath.checkPod(a.spec)).map((f) => f.kind)).toEqual([
      'host-route-missing',
      'pod-interface-down',
      'pod-address-missing',
      'pod-neighbour-missing',
      'pod-neighbour-missing',
      'pod-route-missing',
      'pod-route-missing',
      'pod-route-missing',
    ]);
    await h.deleteNetns(a.spec.netns);
    expect((await h.datapath.checkPod(a.spec)).map((f) => f.kind)).toEqual([
      'host-veth-missing',
      'pod-netns-missing',
    ]);
  });

  it('tears down twice, after the namespace is gone, and never a veth that is not the pod’s', async () => {
    h = await KernelHarness.create();
    const a = await podIn(h, 'k-del', 16);
    await h.datapath.setupPod(a.spec);
    const b = await podIn(h, 'k-collide', 17, { hostVeth: a.spec.hostVeth });
    const err = await h.datapath.setupPod(b.spec).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(DatapathError);
    expect((err as DatapathError).step).toBe('create-veth');
    expect(await h.datapath.teardownPod(b.spec)).toEqual({
      deletedVeth: false,
      notOwned: true,
      removedRoutes: [],
    });
    expect(await pingOnce(h.node, '2001:db8:100::16')).toBe(true);

    expect(await h.datapath.teardownPod(a.spec)).toEqual({
      deletedVeth: true,
      notOwned: false,
      removedRoutes: [],
    });
    expect(await ipJson(h.node, ['route', 'show', 'table', 'all', 'proto', '241'])).toEqual([]);
    expect(await h.datapath.teardownPod(a.spec)).toEqual({
      deletedVeth: false,
      notOwned: false,
      removedRoutes: [],
    });

    const c = await podIn(h, 'k-gone', 18);
    await h.datapath.setupPod(c.spec);
    await h.deleteNetns(c.spec.netns);
    expect(await h.datapath.teardownPod(c.spec)).toEqual({
      deletedVeth: false,
      notOwned: false,
      removedRoutes: [],
    });
    expect(await h.datapath.listPodVeths()).toEqual([]);
  });

  it('tears down an exclusive veth with one ip process, leftover flock routes included', async () => {
    const rec = recordingRunner();
    h = await KernelHarness.create(rec.runner);
    const { spec } = await podIn(h, 'k-excl', 20);
    await h.datapath.setupPod(spec);
    // A leftover flock route for the pod's IPv4 address through another (non-flock) device.
    await h.node.exec('ip', ['route', 'replace', '192.0.2.20/32', 'dev', 'lo', 'proto', '241']);
    rec.calls.length = 0;
    const exclusive = { ...spec, exclusive: true };
    expect(await h.datapath.teardownPod(exclusive)).toEqual({
      deletedVeth: true,
      notOwned: false,
      removedRoutes: ['192.0.2.20/32'],
    });
    expect(rec.calls.filter((c) => c.args.includes('ip'))).toHaveLength(1);
    expect(await ipJson(h.node, ['route', 'show', 'table', 'all', 'proto', '241'])).toEqual([]);
    expect(await h.datapath.listPodVeths()).toEqual([]);
    // Again: the delete fails, a read says the veth is gone, and that is success.
    expect(await h.datapath.teardownPod(exclusive)).toEqual({
      deletedVeth: false,
      notOwned: false,
      removedRoutes: [],
    });
  });

  it('accepts a namespace given as /proc/PID/ns/net', async () => {
    h = await KernelHarness.create();
    const a = await podIn(h, 'k-proc', 19);
    const holder = a.ns.spawn('sleep', ['60']);
    const spec = { ...a.spec, netns: `/proc/${holder.pid}/ns/net` };
    await h.datapath.setupPod(spec);
    expect(await pingOnce(h.node, '2001:db8:100::19')).toBe(true);
    expect(await h.datapath.checkPod(spec)).toEqual([]);
  });
});
