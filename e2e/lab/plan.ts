// The lab's fixed plan: names, addresses and ASNs of the router and the nodes. Everything the
// lab creates in the kernel carries the LAB_PREFIX, so `lab down` can find leftovers.
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';

/** Namespace prefixes (Netns.create adds -<6 hex>): router, nodes, pods. */
export const LAB_PREFIX = 'flab';
export const ROUTER_NS_PREFIX = 'flabtor';
export const NODE_NS_PREFIX = 'flabnode';
export const POD_NS_PREFIX = 'flabpod';

export const ROUTER_ASN = 65000;
export const NODE_ASN = 64512;
/** The router's own address (on its loopback); every node peers with it, multihop 2. */
export const ROUTER_ID6 = '2001:db8:ffff::1';
/** Public pod addresses: one /64 per node out of this /56. */
export const POOL_CIDR6 = '2001:db8:100::/56';
export const POOL_NAME = 'lab';
export const MAX_NODES = 9;

/** The e2e package (the same from its TypeScript sources under vitest and from dist/). */
export const E2E_ROOT = dirname(createRequire(import.meta.url).resolve('@flock/e2e/package.json'));
export const REPO_ROOT = dirname(E2E_ROOT);
/** Scripts the lab runs as processes inside namespaces (always the built ones). */
export const labScript = (name: 'workload' | 'probe') =>
  join(E2E_ROOT, 'dist', 'lab', `${name}.js`);
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

/** The sample Pool: every node, a /64 each, BGP to the router. */
export function samplePool(): object {
  return {
    apiVersion: 'flock.fritzlab.net/v1alpha1',
    kind: 'Pool',
    metadata: { name: POOL_NAME },
    spec: {
      ipv6: { cidr: POOL_CIDR6, nodePrefixLength: 64 },
      bgp: {
        asn: NODE_ASN,
        peers: [
          { address: ROUTER_ID6, asn: ROUTER_ASN, multihop: 2, holdTime: 9, keepaliveTime: 3 },
        ],
      },
    },
  };
}

/** The sample workload: a Deployment whose pods answer HTTP on 8080 and UDP echo on 5353. */
export function sampleDeployment(replicas: number): object {
  return {
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: { name: 'web', namespace: 'default' },
    spec: {
      replicas,
      selector: { matchLabels: { app: 'web' } },
      template: {
        metadata: { labels: { app: 'web' } },
        spec: {
          // Spread over the nodes so that every node wires pods (a soft rule: after a node dies,
          // its replacement pods must still find a place).
          topologySpreadConstraints: [
            {
              maxSkew: 1,
              topologyKey: 'kubernetes.io/hostname',
              whenUnsatisfiable: 'ScheduleAnyway',
              labelSelector: { matchLabels: { app: 'web' } },
            },
          ],
          containers: [
            {
              name: 'web',
              image: 'flock.lab/workload:1',
              ports: [
                { containerPort: 8080, protocol: 'TCP' },
                { containerPort: 5353, protocol: 'UDP' },
              ],
            },
          ],
        },
      },
    },
  };
}
