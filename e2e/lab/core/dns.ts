// The lab's cluster DNS: CoreDNS deployed as kubeadm and the kube-up addon deploy it
// (k8s.io/kubernetes cluster/addons/dns/coredns/coredns.yaml.base at the control plane's
// version): ServiceAccount, ClusterRole and its binding, the Corefile, a Deployment of two
// replicas (spread over the nodes when it can) and the Service `kube-dns` at fixed ClusterIPs
// (CLUSTER_DNS_IPS, the kubelets' clusterDNS). CoreDNS reaches the API server the way every
// in-cluster client does, through the `kubernetes` Service from the pod network, with its
// ServiceAccount's token. What differs from upstream's addon, and why:
// - no `forward . /etc/resolv.conf` (nor `loop`, which guards forwarding): the lab is offline,
//   no resolver outside the cluster is reachable from a node, and the kubelets give pods no host
//   resolver (node/config.ts). Names outside the cluster's zones and the lab's own are refused.
// - no `pods` in the ClusterRole: `pods insecure` answers pod names from the query alone; only
//   `pods verified` watches pods (plugin/kubernetes: initPodCache). No `endpoints` either:
//   CoreDNS 1.14 reads EndpointSlices.
// - the image is the static binary alone, run as root with every capability dropped but
//   NET_BIND_SERVICE (upstream's distroless image runs as 65532 with a file capability, which
//   the lab's image writer does not set).
import { z } from 'zod';
import { CONFIGMAPS, ENDPOINT_SLICES, resourcePath, SERVICES, type ResourceRef } from '@flock/kube';
import { eventually } from '@flock/testkit';
import { corednsImage } from '../node/images.js';
import type { Lab } from './lab.js';
import {
  CLUSTER_DNS_IPS,
  CLUSTER_DOMAIN,
  IPV4_SERVER,
  LAB_NAT64_PREFIX,
  inFamilyOrder,
  type PrimaryFamily,
} from './plan.js';
import { isPodReady } from './pod-list.js';
import { DEPLOYMENTS, labKubectl, listPods } from './workloads.js';

export const DNS_NAMESPACE = 'kube-system';
export const DNS_SERVICE = 'kube-dns';
export const DNS_APP = 'kube-dns';
const NAME = 'coredns';
const LABELS = { 'k8s-app': DNS_APP };
export const DNS_REPLICAS = 2;

const SERVICE_ACCOUNTS: ResourceRef = {
  group: '',
  version: 'v1',
  plural: 'serviceaccounts',
  kind: 'ServiceAccount',
  namespaced: true,
};
const CLUSTER_ROLES: ResourceRef = {
  group: 'rbac.authorization.k8s.io',
  version: 'v1',
  plural: 'clusterroles',
  kind: 'ClusterRole',
  namespaced: false,
};
const CLUSTER_ROLE_BINDINGS: ResourceRef = {
  ...CLUSTER_ROLES,
  plural: 'clusterrolebindings',
  kind: 'ClusterRoleBinding',
};

/**
 * The Corefile: the cluster's zones and the reverse zones from the Kubernetes API; and the lab's
 * own zone, where the IPv4-only server beside the router has an A record only and DNS64 answers
 * AAAA queries with it at the lab's NAT64 prefix (a zone of its own: DNS64 in the cluster's
 * block would also synthesize AAAA records for IPv4-only Services, which the e2e specs do not
 * expect).
 */
export function corefile(domain = CLUSTER_DOMAIN): string {
  return `${IPV4_SERVER.zone}:53 {
    errors
    hosts {
        ${IPV4_SERVER.address} ${IPV4_SERVER.name}
    }
    dns64 {
        prefix ${LAB_NAT64_PREFIX}
    }
}
.:53 {
    errors
    health {
        lameduck 5s
    }
    ready
    kubernetes ${domain} in-addr.arpa ip6.arpa {
        pods insecure
        ttl 30
    }
    prometheus :9153
    cache 30
    reload
    loadbalance
}
`;
}

/** Every object of the cluster DNS, each with its resource, in the order they are applied. */
export function clusterDnsObjects(
  image: string,
  primary: PrimaryFamily = 'IPv6',
): [ResourceRef, object][] {
  const meta = (extra: object = {}) => ({ name: NAME, namespace: DNS_NAMESPACE, ...extra });
  const rbacName = `system:${NAME}`;
  return [
    [SERVICE_ACCOUNTS, { apiVersion: 'v1', kind: 'ServiceAccount', metadata: meta() }],
    [
      CLUSTER_ROLES,
      {
        apiVersion: 'rbac.authorization.k8s.io/v1',
        kind: 'ClusterRole',
        metadata: { name: rbacName },
        rules: [
          { apiGroups: [''], resources: ['services', 'namespaces'], verbs: ['list', 'watch'] },
          {
            apiGroups: ['discovery.k8s.io'],
            resources: ['endpointslices'],
            verbs: ['list', 'watch'],
          },
        ],
      },
    ],
    [
      CLUSTER_ROLE_BINDINGS,
      {
        apiVersion: 'rbac.authorization.k8s.io/v1',
        kind: 'ClusterRoleBinding',
        metadata: { name: rbacName },
        roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: rbacName },
        subjects: [{ kind: 'ServiceAccount', name: NAME, namespace: DNS_NAMESPACE }],
      },
    ],
    [
      CONFIGMAPS,
      { apiVersion: 'v1', kind: 'ConfigMap', metadata: meta(), data: { Corefile: corefile() } },
    ],
    [DEPLOYMENTS, deployment(image)],
    [
      SERVICES,
      {
        apiVersion: 'v1',
        kind: 'Service',
        metadata: {
          name: DNS_SERVICE,
          namespace: DNS_NAMESPACE,
          labels: { ...LABELS, 'kubernetes.io/name': 'CoreDNS' },
        },
        spec: {
          selector: LABELS,
          ipFamilyPolicy: 'RequireDualStack',
          ipFamilies: primary === 'IPv6' ? ['IPv6', 'IPv4'] : ['IPv4', 'IPv6'],
          clusterIP: inFamilyOrder(CLUSTER_DNS_IPS, primary)[0],
          clusterIPs: inFamilyOrder(CLUSTER_DNS_IPS, primary),
          ports: [
            { name: 'dns', port: 53, protocol: 'UDP' },
            { name: 'dns-tcp', port: 53, protocol: 'TCP' },
            { name: 'metrics', port: 9153, protocol: 'TCP' },
          ],
        },
      },
    ],
  ];
}

function deployment(image: string): object {
  return {
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: { name: NAME, namespace: DNS_NAMESPACE, labels: LABELS },
    spec: {
      replicas: DNS_REPLICAS,
      strategy: { type: 'RollingUpdate', rollingUpdate: { maxUnavailable: 1 } },
      selector: { matchLabels: LABELS },
      template: {
        metadata: { labels: LABELS },
        spec: {
          securityContext: { seccompProfile: { type: 'RuntimeDefault' } },
          priorityClassName: 'system-cluster-critical',
          serviceAccountName: NAME,
          affinity: {
            podAntiAffinity: {
              preferredDuringSchedulingIgnoredDuringExecution: [
                {
                  weight: 100,
                  podAffinityTerm: {
                    labelSelector: { matchLabels: LABELS },
                    topologyKey: 'kubernetes.io/hostname',
                  },
                },
              ],
            },
          },
          tolerations: [{ key: 'CriticalAddonsOnly', operator: 'Exists' }],
          nodeSelector: { 'kubernetes.io/os': 'linux' },
          // Its own resolver is no concern: the Corefile forwards nowhere.
          dnsPolicy: 'Default',
          containers: [
            {
              name: NAME,
              image,
              imagePullPolicy: 'IfNotPresent',
              resources: {
                limits: { memory: '170Mi' },
                requests: { cpu: '100m', memory: '70Mi' },
              },
              args: ['-conf', '/etc/coredns/Corefile'],
              volumeMounts: [{ name: 'config-volume', mountPath: '/etc/coredns', readOnly: true }],
              ports: [
                { containerPort: 53, name: 'dns', protocol: 'UDP' },
                { containerPort: 53, name: 'dns-tcp', protocol: 'TCP' },
                { containerPort: 9153, name: 'metrics', protocol: 'TCP' },
              ],
              livenessProbe: {
                httpGet: { path: '/health', port: 8080, scheme: 'HTTP' },
                initialDelaySeconds: 60,
                timeoutSeconds: 5,
                successThreshold: 1,
                failureThreshold: 5,
              },
              // Ready once the kubernetes plugin has synced Services, EndpointSlices and
              // Namespaces from the API server.
              readinessProbe: {
                httpGet: { path: '/ready', port: 8181, scheme: 'HTTP' },
                periodSeconds: 2,
              },
              securityContext: {
                allowPrivilegeEscalation: false,
                capabilities: { add: ['NET_BIND_SERVICE'], drop: ['ALL'] },
                readOnlyRootFilesystem: true,
              },
            },
          ],
          volumes: [
            {
              name: 'config-volume',
              configMap: { name: NAME, items: [{ key: 'Corefile', path: 'Corefile' }] },
            },
          ],
        },
      },
    },
  };
}

/** Apply the cluster DNS's objects (its pods start once the nodes are Ready). */
export async function applyClusterDns(lab: Lab): Promise<void> {
  for (const [resource, obj] of clusterDnsObjects(corednsImage(), lab.primaryFamily))
    await lab.apply(resource, obj);
}

const EndpointSliceList = z.object({
  items: z.array(
    z.looseObject({
      addressType: z.string(),
      endpoints: z
        .array(
          z.looseObject({
            addresses: z.array(z.string()),
            conditions: z.looseObject({ ready: z.boolean().optional() }).optional(),
          }),
        )
        .nullish(),
    }),
  ),
});

/** The addresses of kube-dns's ready endpoints, by family (IPv6, IPv4). */
async function readyEndpoints(lab: Lab): Promise<{ IPv6: string[]; IPv4: string[] }> {
  const raw = await lab.api!.request({
    method: 'GET',
    path: resourcePath(ENDPOINT_SLICES, { namespace: DNS_NAMESPACE }),
    query: { labelSelector: `kubernetes.io/service-name=${DNS_SERVICE}` },
  });
  const out = { IPv6: [] as string[], IPv4: [] as string[] };
  for (const slice of EndpointSliceList.parse(raw).items) {
    if (slice.addressType !== 'IPv6' && slice.addressType !== 'IPv4') continue;
    for (const e of slice.endpoints ?? [])
      if (e.conditions?.ready) out[slice.addressType].push(...e.addresses);
  }
  return out;
}

/** The CoreDNS pods. */
export const dnsPods = (lab: Lab) => listPods(lab, DNS_NAMESPACE, `k8s-app=${DNS_APP}`);

/** What the CoreDNS pods say: phase, readiness, and the last lines of each one's log. */
async function diagnose(lab: Lab): Promise<string> {
  const pods = await dnsPods(lab);
  if (!pods.length) return 'no CoreDNS pod exists (see the Deployment and its ReplicaSet)';
  const lines: string[] = [];
  for (const p of pods) {
    const where = `${p.metadata.name} on ${p.spec.nodeName ?? '(unscheduled)'}`;
    lines.push(`${where}: ${p.status?.phase ?? '?'}, ${isPodReady(p) ? 'Ready' : 'not Ready'}`);
    const log = await labKubectl(lab, ['logs', '-n', DNS_NAMESPACE, p.metadata.name, '--tail=8'])
      .then((r) => r.stdout)
      .catch((e: unknown) => `(no log: ${e instanceof Error ? e.message : String(e)})`);
    lines.push(`  ${log.trim().split('\n').join('\n  ')}`);
  }
  return lines.join('\n');
}

/**
 * Wait until every CoreDNS replica is Ready (synced with the API server) and kube-dns has ready
 * endpoints in both families; on timeout, throws with each pod's state and log tail.
 */
export async function waitForClusterDns(lab: Lab, timeoutMs = 120_000): Promise<void> {
  try {
    await eventually(
      `the cluster DNS (${DNS_NAMESPACE}/${NAME}, ${DNS_REPLICAS} replicas Ready; Service ${DNS_SERVICE} with ready endpoints in both families)`,
      async () => {
        const ready = (await dnsPods(lab)).filter(isPodReady).length;
        if (ready < DNS_REPLICAS) throw new Error(`${ready} of ${DNS_REPLICAS} replicas Ready`);
        const eps = await readyEndpoints(lab);
        if (eps.IPv6.length < DNS_REPLICAS || eps.IPv4.length < DNS_REPLICAS)
          throw new Error(`ready endpoints: ${JSON.stringify(eps)}`);
        return true;
      },
      { timeoutMs, intervalMs: 500 },
    );
  } catch (e) {
    const why = await diagnose(lab).catch((d: unknown) => `(could not look: ${String(d)})`);
    throw new Error(`${e instanceof Error ? e.message : String(e)}\n${why}`, { cause: e });
  }
}
