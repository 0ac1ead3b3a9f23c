// LoadBalancer Services in the lab: the Service object the scenarios and benchmarks create,
// and what the API server says about it (its addresses, its Events).
import { eventually } from '@flock/testkit';
import { objectPath, SERVICES } from '@flock/kube';
import type { Lab } from './lab.js';
import { WORKLOAD_PORT } from './plan.js';

export interface LbService {
  metadata: { name: string; namespace: string; annotations?: Record<string, string> };
  spec?: { clusterIP?: string; externalIPs?: string[] };
  status?: { loadBalancer?: { ingress?: { ip?: string }[] } };
}

export interface LbServiceOptions {
  namespace?: string;
  /** externalTrafficPolicy Local (else Cluster). */
  local?: boolean;
  dualStack?: boolean;
  /** One family only. */
  family?: 'IPv4' | 'IPv6';
  port?: number;
  annotations?: Record<string, string>;
  loadBalancerClass?: string;
  /** Another type (ClusterIP: with externalIPs). */
  type?: 'LoadBalancer' | 'ClusterIP';
  externalIPs?: string[];
}

/** A Service of the pods labelled app=APP on the workload port. */
export function lbService(name: string, app: string, o: LbServiceOptions = {}): object {
  const type = o.type ?? 'LoadBalancer';
  return {
    apiVersion: 'v1',
    kind: 'Service',
    metadata: {
      name,
      namespace: o.namespace ?? 'default',
      ...(o.annotations ? { annotations: o.annotations } : {}),
    },
    spec: {
      type,
      selector: { app },
      externalTrafficPolicy: o.local ? 'Local' : 'Cluster',
      ...(o.dualStack ? { ipFamilyPolicy: 'RequireDualStack' } : {}),
      ...(o.family ? { ipFamilyPolicy: 'SingleStack', ipFamilies: [o.family] } : {}),
      ...(o.loadBalancerClass ? { loadBalancerClass: o.loadBalancerClass } : {}),
      ...(o.externalIPs ? { externalIPs: o.externalIPs } : {}),
      ports: [
        { name: 'http', port: o.port ?? WORKLOAD_PORT, targetPort: WORKLOAD_PORT, protocol: 'TCP' },
      ],
    },
  };
}

export const getService = async (lab: Lab, name: string, namespace = 'default') =>
  (await lab.api!.request({
    method: 'GET',
    path: objectPath(SERVICES, name, namespace),
  })) as LbService;

/** The addresses in the Service's status.loadBalancer.ingress. */
export const ingressIps = (s: LbService) =>
  (s.status?.loadBalancer?.ingress ?? []).flatMap((i) => (i.ip ? [i.ip] : []));

/** Wait until the Service has `count` addresses (polled every 50 ms); returns them. */
export function waitForIngress(
  lab: Lab,
  name: string,
  namespace = 'default',
  count = 1,
): Promise<string[]> {
  return eventually(
    `Service ${namespace}/${name} assigned`,
    async () => {
      const ips = ingressIps(await getService(lab, name, namespace));
      return ips.length >= count ? ips : undefined;
    },
    { timeoutMs: 30_000, intervalMs: 50 },
  );
}

/** The messages of the Service's Events of `reason`. */
export async function serviceEvents(
  lab: Lab,
  namespace: string,
  name: string,
  reason: string,
): Promise<string[]> {
  const list = (await lab.api!.request({
    method: 'GET',
    path: `/api/v1/namespaces/${namespace}/events`,
  })) as {
    items: {
      reason?: string;
      message?: string;
      involvedObject?: { name?: string; kind?: string };
    }[];
  };
  return list.items
    .filter(
      (e) =>
        e.reason === reason &&
        e.involvedObject?.kind === 'Service' &&
        e.involvedObject.name === name,
    )
    .map((e) => e.message ?? '');
}

export async function deleteService(lab: Lab, name: string, namespace = 'default') {
  await lab
    .api!.request({ method: 'DELETE', path: objectPath(SERVICES, name, namespace) })
    .catch(() => undefined);
}

/** The router's next hops for one address (a /128 or /32). */
export const routerHops = (lab: Lab, ip: string) =>
  lab.router!.nextHops(`${ip}/${ip.includes(':') ? 128 : 32}`);
