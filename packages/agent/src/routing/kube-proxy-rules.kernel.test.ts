// The real twin of the kubeProxyRules fake (services.test.ts): `nft get element` against a table
// shaped as kube-proxy's nftables mode writes it, in a test namespace. Needs root and nft.
import { Netns, requireKernelTier } from '@flock/testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { nftReadKubeProxy } from './kube-proxy-rules.js';

let ns: Netns | undefined;

/** kube-proxy's table of one family: the two address maps, one element in each. */
const table = (family: 'ip' | 'ip6', addr: string, withEndpoints: string, without: string) => `
table ${family} kube-proxy {
  chain service-x { }
  chain reject-x { }
  map service-ips {
    type ${addr} . inet_proto . inet_service : verdict
    elements = { ${withEndpoints} : goto service-x }
  }
  map no-endpoint-services {
    type ${addr} . inet_proto . inet_service : verdict
    elements = { ${without} : goto reject-x }
  }
}`;

describe("kube-proxy's rules, read with nft (kernel)", () => {
  beforeAll(async () => {
    requireKernelTier('nft');
    ns = await Netns.create('kprules');
  });
  afterAll(async () => {
    await ns?.destroy();
  });

  it('no kube-proxy table (iptables or IPVS mode): cannot tell, so yes', async () => {
    const view = await nftReadKubeProxy(ns!.name)();
    expect(view.has('2001:db8:400::2', 'TCP', 443)).toBe(true);
    expect(view.has('203.0.113.64', 'UDP', 53)).toBe(true);
  });

  it('nftables mode: yes for an address in service-ips or no-endpoint-services, else no', async () => {
    await ns!.exec('nft', ['-f', '-'], {
      input:
        table('ip6', 'ipv6_addr', '2001:db8:400::2 . tcp . 443', '2001:db8:400::3 . udp . 53') +
        table('ip', 'ipv4_addr', '203.0.113.64 . tcp . 80', '203.0.113.65 . sctp . 9'),
    });
    const view = await nftReadKubeProxy(ns!.name)();
    expect(view.has('2001:db8:400::2', 'TCP', 443)).toBe(true);
    expect(view.has('2001:db8:400:0:0::3', 'UDP', 53)).toBe(true);
    expect(view.has('2001:db8:400::2', 'UDP', 443)).toBe(false);
    expect(view.has('2001:db8:400::2', 'TCP', 444)).toBe(false);
    expect(view.has('2001:db8:400::4', 'TCP', 443)).toBe(false);
    expect(view.has('203.0.113.64', 'TCP', 80)).toBe(true);
    expect(view.has('203.0.113.65', 'SCTP', 9)).toBe(true);
    expect(view.has('203.0.113.66', 'TCP', 80)).toBe(false);
  });

  it('a kube-proxy table without its maps is an error, not a yes', async () => {
    await ns!.exec('nft', ['delete', 'table', 'ip', 'kube-proxy']);
    await ns!.exec('nft', ['add', 'table', 'ip', 'kube-proxy']);
    await expect(nftReadKubeProxy(ns!.name)()).rejects.toThrow(
      /list map ip kube-proxy service-ips/,
    );
  });

  it('refuses a namespace name that is not one', () => {
    expect(() => nftReadKubeProxy('a b')).toThrow(/invalid network namespace/);
  });
});
