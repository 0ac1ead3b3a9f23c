// The cluster DNS's objects as the lab applies them (scenarios/dns.cluster.test.ts runs them).
import { BlockList } from 'node:net';
import { describe, expect, it } from 'vitest';
import { kubeletConfig } from '../node/config.js';
import { clusterDnsObjects, corefile, DNS_NAMESPACE, DNS_SERVICE } from './dns.js';
import { CLUSTER_DNS_IPS, CLUSTER_DOMAIN, KUBERNETES_SERVICE_IPS, SERVICE_CIDRS } from './plan.js';

const IMAGE = 'registry.k8s.io/coredns/coredns:v1.14.2';
const objects = new Map(clusterDnsObjects(IMAGE).map(([, o]) => [(o as { kind: string }).kind, o]));
/** The object of a kind, as the shape the test reads. */
const byKind = <T>(kind: string) => objects.get(kind) as T;

describe('cluster DNS objects', () => {
  it('kube-dns has one fixed ClusterIP per family, inside the Service CIDRs, not the kubernetes Service’s', () => {
    const cidrs = new BlockList();
    for (const c of SERVICE_CIDRS) {
      const [net, bits] = c.split('/');
      cidrs.addSubnet(net!, Number(bits), net!.includes(':') ? 'ipv6' : 'ipv4');
    }
    for (const ip of CLUSTER_DNS_IPS) {
      expect(cidrs.check(ip, ip.includes(':') ? 'ipv6' : 'ipv4'), ip).toBe(true);
      expect(KUBERNETES_SERVICE_IPS).not.toContain(ip);
    }
    const svc = byKind<{
      metadata: { name: string; namespace: string };
      spec: { clusterIPs: string[]; ipFamilies: string[]; ports: { port: number }[] };
    }>('Service');
    expect(svc.metadata).toMatchObject({ name: DNS_SERVICE, namespace: DNS_NAMESPACE });
    expect(svc.spec.clusterIPs).toEqual(CLUSTER_DNS_IPS);
    expect(svc.spec.ipFamilies).toEqual(['IPv6', 'IPv4']);
  });

  it('on an IPv4-first lab kube-dns lists its IPv4 address and family first', () => {
    const [, svc] = clusterDnsObjects(IMAGE, 'IPv4').find(
      ([, o]) => (o as { kind: string }).kind === 'Service',
    )! as [unknown, { spec: { clusterIP: string; clusterIPs: string[]; ipFamilies: string[] } }];
    expect(svc.spec.clusterIPs).toEqual([CLUSTER_DNS_IPS[1], CLUSTER_DNS_IPS[0]]);
    expect(svc.spec.clusterIP).toBe(CLUSTER_DNS_IPS[1]);
    expect(svc.spec.ipFamilies).toEqual(['IPv4', 'IPv6']);
  });

  it('the Corefile serves the cluster and reverse zones and forwards nowhere (the lab is offline)', () => {
    const text = corefile();
    expect(text).toContain(`kubernetes ${CLUSTER_DOMAIN} in-addr.arpa ip6.arpa {`);
    expect(text).toMatch(/\bready\b/);
    expect(text).not.toMatch(/\bforward\b/);
    expect(text).toContain('pods insecure');
  });

  it("DNS64 only in the lab's own zone, where the IPv4-only server has its A record", () => {
    const [lab, cluster] = corefile().split('\n.:53 {');
    expect(lab).toMatch(/^lab\.example:53 \{/);
    expect(lab).toContain('192.0.2.80 v4only.lab.example');
    expect(lab).toContain('prefix 2001:db8:64::/96');
    expect(cluster).not.toContain('dns64');
  });

  it('the ClusterRole grants what `pods insecure` needs: list/watch of Services, Namespaces, EndpointSlices', () => {
    const role = byKind<{
      rules: { apiGroups: string[]; resources: string[]; verbs: string[] }[];
    }>('ClusterRole');
    const granted = role.rules.flatMap((r) => r.resources.map((res) => `${r.apiGroups[0]}/${res}`));
    expect(granted.sort()).toEqual(['/namespaces', '/services', 'discovery.k8s.io/endpointslices']);
    for (const r of role.rules) expect(r.verbs).toEqual(['list', 'watch']);
  });

  it('the kubelet names both kube-dns addresses and no host resolver', () => {
    const config = kubeletConfig({
      cgroupRoot: '/flab/n',
      clientCaFile: '/ca.crt',
      maxPods: 60,
      clusterDomain: CLUSTER_DOMAIN,
      clusterDns: CLUSTER_DNS_IPS,
    });
    expect(config).toContain(`clusterDNS:\n  - ${CLUSTER_DNS_IPS[0]}\n  - ${CLUSTER_DNS_IPS[1]}\n`);
    expect(config).toContain(`clusterDomain: ${CLUSTER_DOMAIN}\n`);
    expect(config).toContain(`resolvConf: ""\n`);
  });
});
