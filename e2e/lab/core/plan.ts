// The lab's fixed plan: names, addresses and ASNs of the router and the nodes. Everything the
// lab creates in the kernel carries the LAB_PREFIX, so `lab down` can find leftovers.
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { ANYCAST_ANNOTATION, PINNED_IP_ANNOTATION } from '@flock/api';
import { agnhostImage } from '../node/images.js';

/** Namespace prefixes (Netns.create adds -<6 hex>): router, nodes, pods. */
export const LAB_PREFIX = 'flab';
export const ROUTER_NS_PREFIX = 'flabtor';
export const NODE_NS_PREFIX = 'flabnode';
/** The control plane's namespace (etcd, apiserver, controller-manager, scheduler). */
export const CP_NS_PREFIX = 'flabcp';

export const ROUTER_ASN = 65000;
export const NODE_ASN = 64512;
/** The router's own address (on its loopback); every node peers with it, multihop 2. */
export const ROUTER_ID6 = '2001:db8:ffff::1';
/** The router's IPv4 loopback address and BGP router id. */
export const ROUTER_ID4 = '10.250.0.1';
/**
 * Public pod addresses: one /64 per node out of this /56, and one IPv4 /26 per node (62
 * addresses: the IPv4 slice, not the /64, bounds how many pods a node can run).
 */
export const POOL_CIDR6 = '2001:db8:100::/56';
export const POOL_CIDR4 = '198.18.0.0/16';
export const NODE_PREFIX6 = 64;
export const NODE_PREFIX4 = 26;
/** Pods a node's kubelet may run (within its IPv4 slice). */
export const MAX_PODS = 60;
/** Addresses a pod may pin (they follow it across nodes) and announce as anycast. */
export const PINNED_CIDR6 = '2001:db8:200::/120';
export const ANYCAST_CIDRS = ['2001:db8:300::/120', '203.0.113.0/28'];
/** The sample anycast service's address, and the sample pinned pod's. */
export const SAMPLE_ANYCAST6 = '2001:db8:300::53';
/** The sample Pool's LoadBalancer Service ranges (IPv6, IPv4). */
export const SERVICE_LB_CIDRS = ['2001:db8:400::/120', '203.0.113.64/28'];
export const SAMPLE_PINNED6 = '2001:db8:200::10';
export const POOL_NAME = 'lab';
/**
 * NAT64 in the lab (scenarios/nat64.cluster.test.ts): a /96 of the lab's own space (its IPv4-only
 * server's address is documentation space, which the well-known prefix may not stand for).
 */
export const LAB_NAT64_PREFIX = '2001:db8:64::/96';
/** An IPv4-only server beside the router (core/ipv4-server.ts), and its name in the cluster DNS. */
export const IPV4_SERVER = {
  name: 'v4only.lab.example',
  zone: 'lab.example',
  address: '192.0.2.80',
  router: '192.0.2.1',
  prefixLength: 24,
} as const;
/**
 * The control plane's link to the router (router side ::1 / .1): the API server listens on
 * [CP_ADDR6]:APISERVER_PORT, where the nodes' kubelets, kube-proxies and agents reach it, and it
 * reaches each kubelet at the node's InternalIP (exec, logs, port-forward).
 */
export const CP_ROUTER6 = '2001:db8:fe::1';
export const CP_ADDR6 = '2001:db8:fe::2';
export const CP_ROUTER4 = '10.250.254.1';
export const CP_ADDR4 = '10.250.254.2';
export const APISERVER_PORT = 6443;
export const NODE_API_SERVER = `https://[${CP_ADDR6}]:${APISERVER_PORT}`;
/**
 * The family the cluster lists first (Service ranges, node addresses, podIPs). flock is IPv6
 * first; an `IPv4` lab exists for upstream specs that work only when IPv4 comes first.
 */
export type PrimaryFamily = 'IPv6' | 'IPv4';
/** One value per family, IPv6's first. */
export type FamilyPair = readonly [ipv6: string, ipv4: string];
/** Both values, the primary family's first. */
export const inFamilyOrder = (pair: FamilyPair, primary: PrimaryFamily): string[] =>
  primary === 'IPv6' ? [pair[0], pair[1]] : [pair[1], pair[0]];

/**
 * Service addresses, IPv6 first (dual-stack). Node and transit addresses stay outside them:
 * kube-proxy drops traffic to unallocated service addresses.
 */
export const SERVICE_CIDRS: FamilyPair = ['fd00:10:96::/112', '10.96.0.0/16'];
/** The `kubernetes` Service's addresses (the first of each service range). */
export const KUBERNETES_SERVICE_IPS = ['fd00:10:96::1', '10.96.0.1'];
/** The cluster's DNS domain (the kubelet's clusterDomain, CoreDNS's zone). */
export const CLUSTER_DOMAIN = 'cluster.local';
/**
 * The cluster DNS Service `kube-system/kube-dns` (CoreDNS, core/dns.ts): fixed ClusterIPs, one
 * per family (the tenth of each range, as kubeadm picks), the kubelets' clusterDNS.
 */
export const CLUSTER_DNS_IPS: FamilyPair = ['fd00:10:96::a', '10.96.0.10'];
export const MAX_NODES = 9;
/** The node uplinks (router side .1 / ::1 of each): the router's source addresses. */
export const ROUTER_UPLINKS6 = '2001:db8:ff::/48';
export const ROUTER_UPLINKS4 = '10.250.0.0/16';

/** The e2e package (the same from its TypeScript sources under vitest and from dist/). */
export const E2E_ROOT = dirname(createRequire(import.meta.url).resolve('@flock/e2e/package.json'));
export const REPO_ROOT = dirname(E2E_ROOT);
/** Scripts the lab runs as processes inside namespaces (always the built ones). */
export const labScript = (name: 'probe' | 'prober' | 'reach') =>
  join(E2E_ROOT, 'dist', 'lab', 'probes', `${name}.js`);
export const LAB_DIR = join(REPO_ROOT, '.cache', 'lab');

export interface NodePlan {
  /** Node name (also the Kubernetes Node). */
  name: string;
  /** 1-based index. */
  index: number;
  /** Router side / node side of the uplink, IPv6 /64 and IPv4 /30. */
  router6: string;
  node6: string;
  router4: string;
  node4: string;
  /** Interface name of the uplink inside the router. */
  routerIf: string;
}

/** The plan of node `index` (1-based). */
export function nodePlan(index: number): NodePlan {
  if (!Number.isInteger(index) || index < 1 || index > MAX_NODES)
    throw new Error(`node index must be 1..${MAX_NODES}, got ${index}`);
  return {
    name: `lab-node-${index}`,
    index,
    router6: `2001:db8:ff:${index}::1`,
    node6: `2001:db8:ff:${index}::2`,
    router4: `10.250.${index}.1`,
    node4: `10.250.${index}.2`,
    routerIf: `node${index}`,
  };
}

/**
 * BFD timers of the sample Pool: flock's default, 300 ms × 3 (a silent node is detected within
 * 0.9 s). The router offers ROUTER_BFD, faster, so that the node's side sets the pace: the
 * node-failure benchmark runs its Pool at 200 ms × 3. On this 2-core machine shared with other
 * builds, 200 ms sessions flapped while pods started (docs/announcements.md: timers and their
 * cost), so the tests keep the default.
 */
export const LAB_BFD = { minRxIntervalMs: 300, minTxIntervalMs: 300, multiplier: 3 };
export const ROUTER_BFD = { minRxIntervalMs: 200, minTxIntervalMs: 200, multiplier: 3 };

/** Who may claim the sample Pool's floating addresses: namespace default (the sample workloads'). */
export const SAMPLE_GRANT = {
  namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': 'default' } },
};

/**
 * The sample Pool: every node, a /64 and a /26 each, pinned, anycast and LoadBalancer Service
 * ranges claimable from namespace default, the cluster's Service CIDRs, BGP to the router.
 */
export function samplePool(nodePrefix4 = NODE_PREFIX4): object {
  return {
    apiVersion: 'flock.fritzlab.net/v1alpha1',
    kind: 'Pool',
    metadata: { name: POOL_NAME },
    spec: {
      ipv6: { cidr: POOL_CIDR6, nodePrefixLength: NODE_PREFIX6 },
      ipv4: { cidr: POOL_CIDR4, nodePrefixLength: nodePrefix4 },
      pinned: { cidrs: [PINNED_CIDR6], grants: [SAMPLE_GRANT] },
      anycast: { cidrs: ANYCAST_CIDRS, grants: [SAMPLE_GRANT] },
      // LoadBalancer Services of namespace default get addresses here; every node announces
      // the cluster's Service CIDRs.
      services: {
        cidrs: SERVICE_LB_CIDRS,
        grants: [SAMPLE_GRANT],
        clusterIPs: [...SERVICE_CIDRS],
      },
      bgp: {
        asn: NODE_ASN,
        peers: [
          {
            address: ROUTER_ID6,
            asn: ROUTER_ASN,
            multihop: 2,
            holdTime: 9,
            keepaliveTime: 3,
            // A session the router dropped comes back within seconds, not BIRD's 120 s.
            connectRetryTime: 5,
            errorWaitTime: { min: 1, max: 10 },
            // Sourced from each node's InternalIP (multihop BFD needs a source address).
            bfd: true,
            bfdTimers: LAB_BFD,
          },
        ],
      },
    },
  };
}

/** The workload's HTTP port (agnhost netexec): what probes and Services target. */
export const WORKLOAD_PORT = 8080;
const WORKLOAD_PORTS = [
  { name: 'http', containerPort: WORKLOAD_PORT, protocol: 'TCP' },
  { name: 'udp', containerPort: 5353, protocol: 'UDP' },
];
/** The file whose presence fails a workload's readiness probe (setReady in workloads.ts). */
export const UNREADY_FILE = '/tmp/unready';

/**
 * The lab's workload container: agnhost netexec (HTTP on 8080 — GET /hostname answers the pod's
 * name — and UDP on 5353), Ready by a real probe. The probe is HTTP /healthz, or, with
 * `toggleReady`, an exec probe that fails while UNREADY_FILE exists, so a test can make a pod
 * NotReady and Ready again the way a failing application does.
 */
export function workloadContainer(name: string, toggleReady = false): object {
  const probe = toggleReady
    ? { exec: { command: ['/bin/sh', '-c', `test ! -e ${UNREADY_FILE}`] } }
    : { httpGet: { path: '/healthz', port: 8080 } };
  return {
    name,
    image: agnhostImage(),
    args: ['netexec', '--http-port=8080', '--udp-port=5353'],
    ports: WORKLOAD_PORTS,
    readinessProbe: { ...probe, periodSeconds: 1, failureThreshold: 1, timeoutSeconds: 2 },
  };
}

interface DeploymentShape {
  name: string;
  namespace?: string;
  replicas: number;
  annotations?: Record<string, string>;
  /** Extra pod labels (app=NAME is always there). */
  labels?: Record<string, string>;
  /** Extra pod spec fields (affinity, tolerations, node selectors). */
  podSpec?: Record<string, unknown>;
  /** Readiness a test can switch (workloadContainer). */
  toggleReady?: boolean;
}

/** A Deployment of the lab workload (workloadContainer), label app=NAME. */
export function labDeployment(d: DeploymentShape): object {
  return {
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: { name: d.name, namespace: d.namespace ?? 'default' },
    spec: {
      replicas: d.replicas,
      selector: { matchLabels: { app: d.name } },
      template: {
        metadata: {
          labels: { ...d.labels, app: d.name },
          ...(d.annotations ? { annotations: d.annotations } : {}),
        },
        spec: {
          ...d.podSpec,
          // Pods go when deleted: agnhost ends at once on SIGTERM.
          terminationGracePeriodSeconds: 1,
          containers: [workloadContainer(d.name, d.toggleReady)],
        },
      },
    },
  };
}

const byHostname = (app: string) => ({
  topologyKey: 'kubernetes.io/hostname',
  labelSelector: { matchLabels: { app } },
});

/** The sample workload: Deployment `web`, spread over the nodes. */
export function sampleDeployment(replicas: number): object {
  return labDeployment({
    name: 'web',
    replicas,
    // Spread over the nodes so that every node wires pods (a soft rule: after a node dies,
    // its replacement pods must still find a place).
    podSpec: {
      topologySpreadConstraints: [
        { maxSkew: 1, whenUnsatisfiable: 'ScheduleAnyway', ...byHostname('web') },
      ],
    },
  });
}

/** The sample anycast service: `replicas` pods announcing SAMPLE_ANYCAST6, at most one per node. */
export function sampleAnycast(replicas = 2, onePerNode = true): object {
  return labDeployment({
    name: 'anycast',
    replicas,
    toggleReady: true,
    annotations: { [ANYCAST_ANNOTATION]: SAMPLE_ANYCAST6 },
    ...(onePerNode
      ? {
          podSpec: {
            affinity: {
              podAntiAffinity: {
                requiredDuringSchedulingIgnoredDuringExecution: [byHostname('anycast')],
              },
            },
          },
        }
      : {}),
  });
}

/**
 * The sample pinned pod: one replica keeping SAMPLE_PINNED6 wherever it runs; short
 * tolerations so that a dead node's copy is evicted within seconds (scenario 3).
 */
export function samplePinned(tolerationSeconds = 5): object {
  const tolerate = (key: string) => ({
    key,
    operator: 'Exists',
    effect: 'NoExecute',
    tolerationSeconds,
  });
  return labDeployment({
    name: 'pinned',
    replicas: 1,
    annotations: { [PINNED_IP_ANNOTATION]: SAMPLE_PINNED6 },
    podSpec: {
      tolerations: [
        tolerate('node.kubernetes.io/unreachable'),
        tolerate('node.kubernetes.io/not-ready'),
      ],
    },
  });
}

/**
 * The sample NetworkPolicy: namespace `shop` denies all ingress by default, and lets in only
 * pods of namespaces labelled `shop-access=true` (namespace `frontend`) and the router's
 * uplink addresses (monitoring: `lab status` probes from there), on TCP 8080 only.
 */
export const SHOP_NAMESPACES: object[] = [
  { metadata: { name: 'shop' } },
  { metadata: { name: 'frontend', labels: { 'shop-access': 'true' } } },
  { metadata: { name: 'outsider' } },
];

/** The three pods of the NetworkPolicy sample: apart from each other where possible. */
export function sampleShopDeployments(): object[] {
  const demo = { demo: 'shop' };
  return (['shop', 'frontend', 'outsider'] as const).map((name) =>
    labDeployment({
      name,
      namespace: name,
      replicas: 1,
      labels: demo,
      podSpec: {
        affinity: {
          podAntiAffinity: {
            preferredDuringSchedulingIgnoredDuringExecution: [
              {
                weight: 100,
                podAffinityTerm: {
                  topologyKey: 'kubernetes.io/hostname',
                  labelSelector: { matchLabels: demo },
                  namespaceSelector: {},
                },
              },
            ],
          },
        },
      },
    }),
  );
}

export function samplePolicies(): object[] {
  return [
    {
      apiVersion: 'networking.k8s.io/v1',
      kind: 'NetworkPolicy',
      metadata: { name: 'default-deny-ingress', namespace: 'shop' },
      spec: { podSelector: {}, policyTypes: ['Ingress'] },
    },
    {
      apiVersion: 'networking.k8s.io/v1',
      kind: 'NetworkPolicy',
      metadata: { name: 'allow-frontend', namespace: 'shop' },
      spec: {
        podSelector: { matchLabels: { app: 'shop' } },
        policyTypes: ['Ingress'],
        ingress: [
          {
            from: [
              { namespaceSelector: { matchLabels: { 'shop-access': 'true' } } },
              { ipBlock: { cidr: ROUTER_UPLINKS6 } },
              { ipBlock: { cidr: ROUTER_UPLINKS4 } },
            ],
            ports: [{ protocol: 'TCP', port: 8080 }],
          },
        ],
      },
    },
  ];
}
