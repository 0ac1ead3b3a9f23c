// Objects and reads for tests of the Service address controller, on the in-memory API server
// (unit tier) and on a real one (cluster tier): a Pool with Service ranges, Namespaces with
// the labels the API server gives them, LoadBalancer Services, and what the controller wrote
// (claims, status, Events).
import {
  API_VERSION,
  LOAD_BALANCER_IPS_ANNOTATION,
  POOL_KIND,
  SHARING_KEY_ANNOTATION,
  type AddressClaim,
  type FloatingGrant,
  type Service,
} from '@flock/api';
import type { PoolSpecInput } from './fixtures.js';
import { baseSpec } from './fixtures.js';

/** The Service ranges of the tests' pools: 3 usable IPv6 and 2 usable IPv4 addresses. */
export const SERVICE_CIDR6 = '2001:db8:400::/126';
export const SERVICE_CIDR4 = '203.0.113.64/30';

/** A grant of one namespace, by the label the API server sets and nobody can fake. */
export const grantNamespace = (ns: string, extra: Partial<FloatingGrant> = {}): FloatingGrant => ({
  namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': ns } },
  ...extra,
});

/** A pool whose Service ranges `grants` give out (default: namespace shop). */
export function servicePool(
  name: string,
  o: { cidrs?: string[]; grants?: FloatingGrant[]; ipv6?: string } = {},
) {
  const spec: PoolSpecInput = {
    ...baseSpec(),
    ...(o.ipv6 ? { ipv6: { cidr: o.ipv6, nodePrefixLength: 64 } } : {}),
    services: {
      cidrs: o.cidrs ?? [SERVICE_CIDR6, SERVICE_CIDR4],
      grants: o.grants ?? [grantNamespace('shop')],
    },
  };
  return { apiVersion: API_VERSION, kind: POOL_KIND, metadata: { name }, spec };
}

export const namespaceObject = (name: string, labels: Record<string, string> = {}) => ({
  apiVersion: 'v1',
  kind: 'Namespace',
  metadata: { name, labels: { 'kubernetes.io/metadata.name': name, ...labels } },
});

export interface ServiceInput {
  namespace?: string;
  type?: string;
  /** null: no class. Default: none. */
  loadBalancerClass?: string | null;
  families?: ('IPv6' | 'IPv4')[];
  policy?: 'SingleStack' | 'PreferDualStack' | 'RequireDualStack';
  ports?: { port: number; protocol?: 'TCP' | 'UDP' }[];
  labels?: Record<string, string>;
  /** The load-balancer-ips annotation. */
  request?: string;
  loadBalancerIP?: string;
  sharingKey?: string;
}

/** A Service as the API server holds it (families and policy filled in as it would). */
export function serviceObject(name: string, i: ServiceInput = {}) {
  const annotations: Record<string, string> = {
    ...(i.request !== undefined ? { [LOAD_BALANCER_IPS_ANNOTATION]: i.request } : {}),
    ...(i.sharingKey !== undefined ? { [SHARING_KEY_ANNOTATION]: i.sharingKey } : {}),
  };
  const families = i.families ?? ['IPv6', 'IPv4'];
  return {
    apiVersion: 'v1',
    kind: 'Service',
    metadata: {
      name,
      namespace: i.namespace ?? 'shop',
      ...(i.labels ? { labels: i.labels } : {}),
      ...(Object.keys(annotations).length ? { annotations } : {}),
    },
    spec: {
      type: i.type ?? 'LoadBalancer',
      ...(i.loadBalancerClass ? { loadBalancerClass: i.loadBalancerClass } : {}),
      ...(i.loadBalancerIP ? { loadBalancerIP: i.loadBalancerIP } : {}),
      ipFamilies: families,
      ipFamilyPolicy: i.policy ?? (families.length > 1 ? 'PreferDualStack' : 'SingleStack'),
      ports: (i.ports ?? [{ port: 80 }]).map((p) => ({
        name: `p${p.port}`,
        port: p.port,
        protocol: p.protocol ?? 'TCP',
      })),
    },
  };
}

/** The addresses in a Service's status.loadBalancer.ingress. */
export const ingressOf = (svc: Service | undefined) =>
  (svc?.status?.loadBalancer?.ingress ?? []).map((i) => i.ip);

/** What a claim of a Service address says, in short (undefined: no claim). */
export const claimSummary = (c: AddressClaim | undefined) =>
  c && {
    namespace: c.spec.namespace,
    key: c.spec.key,
    services: c.spec.services,
    released: c.spec.releasedAt !== undefined,
  };
