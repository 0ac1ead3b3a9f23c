// The cluster DNS on real nodes: CoreDNS (core/dns.ts) behind kube-dns, the kubelets' clusterDNS,
// pods resolving Services by name as Kubernetes' own e2e specs do (CheckServiceReachability asks
// for `NAME:PORT` from a pod in the Service's namespace). Everything runs inside a pod through
// `kubectl exec`, with the pod's own resolv.conf: busybox's nslookup asks each kube-dns address
// for A and AAAA records; curl (glibc's resolver: the search domains, the first nameserver)
// connects by name over each family.
import { NAMESPACES, SERVICES } from '@flock/kube';
import { eventually } from '@flock/testkit';
import { describe, expect, it } from 'vitest';
import { CLUSTER_DNS_IPS, CLUSTER_DOMAIN, labDeployment } from '../core/plan.js';
import { startLab } from '../core/test-lab.js';
import {
  DEPLOYMENTS,
  labKubectl,
  listPods,
  waitForReadyPods,
  type LabPod,
} from '../core/workloads.js';

const NS = 'dns-test';
const FQDN = `web.${NS}.svc.${CLUSTER_DOMAIN}`;
/** curl's exit code for a name it could not resolve. */
const CURL_RESOLVE_FAILED = 6;

const { lab } = startLab({
  tmpPrefix: 'flock-lab-dns-',
  tools: ['bird', 'nsenter', 'flock-controlplane', 'kubectl'],
  nodes: 2,
  setup: async (lab) => {
    await lab.apply(NAMESPACES, { apiVersion: 'v1', kind: 'Namespace', metadata: { name: NS } });
    await lab.apply(DEPLOYMENTS, labDeployment({ name: 'web', namespace: NS, replicas: 2 }));
    await lab.apply(SERVICES, {
      apiVersion: 'v1',
      kind: 'Service',
      metadata: { name: 'web', namespace: NS },
      spec: {
        selector: { app: 'web' },
        ipFamilyPolicy: 'RequireDualStack',
        ipFamilies: ['IPv6', 'IPv4'],
        ports: [{ name: 'http', port: 80, targetPort: 8080, protocol: 'TCP' }],
      },
    });
    await lab.apply(DEPLOYMENTS, labDeployment({ name: 'client', namespace: NS, replicas: 1 }));
    await lab.apply(DEPLOYMENTS, labDeployment({ name: 'elsewhere', replicas: 1 }));
    await waitForReadyPods(lab, NS, 'app=web', 2);
    await waitForReadyPods(lab, NS, 'app=client', 1);
    await waitForReadyPods(lab, 'default', 'app=elsewhere', 1);
  },
});

const podOf = async (namespace: string, app: string): Promise<LabPod> => {
  const [pod] = await listPods(lab, namespace, `app=${app}`);
  if (!pod) throw new Error(`no pod app=${app} in ${namespace}`);
  return pod;
};

/** Run a command in the pod's container (its mount namespace: its own resolv.conf). */
const inPod = (pod: LabPod, cmd: string[], okCodes?: number[]) =>
  labKubectl(lab, ['exec', '-n', pod.metadata.namespace, pod.metadata.name, '--', ...cmd], {
    okCodes,
  });

/** The web Service's ClusterIPs, by family. */
async function webClusterIps(): Promise<{ v6: string; v4: string }> {
  const svc = (await lab.api!.request({
    method: 'GET',
    path: `/api/v1/namespaces/${NS}/services/web`,
  })) as { spec?: { clusterIPs?: string[] } };
  const ips = svc.spec?.clusterIPs ?? [];
  const v6 = ips.find((ip) => ip.includes(':'));
  const v4 = ips.find((ip) => !ip.includes(':'));
  if (!v6 || !v4) throw new Error(`web has ClusterIPs ${ips.join(', ')}, not one per family`);
  return { v6, v4 };
}

/** `curl -4|-6 http://NAME/hostname`: the web pod that answered, and the address curl used. */
async function fetchByName(pod: LabPod, name: string, family: 4 | 6) {
  const { stdout } = await inPod(pod, [
    'curl',
    `-${family}`,
    '-sS',
    '--max-time',
    '5',
    '-w',
    '\n%{remote_ip}',
    `http://${name}/hostname`,
  ]);
  const [hostname, remoteIp] = stdout.trim().split('\n');
  return { hostname, remoteIp };
}

describe('cluster DNS (CoreDNS) on real nodes', () => {
  it('pods get the cluster DNS: both kube-dns addresses, their namespace’s search domains, ndots 5', async () => {
    const { stdout } = await inPod(await podOf(NS, 'client'), ['cat', '/etc/resolv.conf']);
    const lines = stdout.split('\n').map((l) => l.trim());
    expect(lines.filter((l) => l.startsWith('nameserver '))).toEqual(
      CLUSTER_DNS_IPS.map((ip) => `nameserver ${ip}`),
    );
    expect(lines).toContain(
      `search ${NS}.svc.${CLUSTER_DOMAIN} svc.${CLUSTER_DOMAIN} ${CLUSTER_DOMAIN}`,
    );
    expect(lines).toContain('options ndots:5');
  });

  it('each kube-dns address answers A and AAAA for the Service’s name with its ClusterIPs', async () => {
    const client = await podOf(NS, 'client');
    const { v6, v4 } = await webClusterIps();
    for (const server of CLUSTER_DNS_IPS) {
      for (const [type, want] of [
        ['a', v4],
        ['aaaa', v6],
      ] as const) {
        const { stdout } = await eventually(
          `${type.toUpperCase()} ${FQDN} from ${server}`,
          async () => {
            const r = await inPod(client, ['nslookup', `-type=${type}`, FQDN, server]);
            return r.stdout.includes(want) ? r : undefined;
          },
          { timeoutMs: 30_000, intervalMs: 1000 },
        );
        expect(stdout).toContain(`Name:\t${FQDN}`);
        // Exactly the Service's address of that family, nothing else (the answers follow the
        // Name: line; the Address: lines above it are the server's).
        const answers = stdout
          .slice(stdout.indexOf(`Name:\t${FQDN}`))
          .split('\n')
          .filter((l) => l.startsWith('Address:'))
          .map((l) => l.replace(/^Address:\s*/, '').trim());
        expect(answers, `${type} ${FQDN} @${server}`).toEqual([want]);
      }
    }
  });

  it('a pod connects by short name and by FQDN over both families; the short name is its namespace’s only', async () => {
    const client = await podOf(NS, 'client');
    const { v6, v4 } = await webClusterIps();
    const web = (await listPods(lab, NS, 'app=web')).map((p) => p.metadata.name);
    for (const name of ['web', FQDN]) {
      for (const [family, ip] of [
        [6, v6],
        [4, v4],
      ] as const) {
        const got = await eventually(
          `curl -${family} http://${name}/hostname from ${NS}`,
          () => fetchByName(client, name, family),
          { timeoutMs: 30_000, intervalMs: 1000 },
        );
        expect(got.remoteIp, `${name} over IPv${family}`).toBe(ip);
        expect(web).toContain(got.hostname);
      }
    }
    // What Kubernetes' CheckServiceReachability runs in its exec pod (testReachabilityOverServiceName).
    await inPod(client, ['sh', '-c', 'echo hostName | nc -v -t -w 2 web 80']);
    // From another namespace the FQDN reaches the same Service; the short name resolves nowhere
    // (`web` is searched as web.default.svc..., which does not exist).
    const elsewhere = await podOf('default', 'elsewhere');
    expect((await fetchByName(elsewhere, FQDN, 6)).remoteIp).toBe(v6);
    const short = await inPod(
      elsewhere,
      ['curl', '-sS', '--max-time', '5', 'http://web/hostname'],
      [CURL_RESOLVE_FAILED],
    );
    expect(short.stderr).toMatch(/Could not resolve host: web/);
  });
});
