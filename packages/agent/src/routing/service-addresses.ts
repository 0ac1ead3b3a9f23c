// Service (LoadBalancer) addresses this node announces. The operator assigns an address: it
// claims it (an AddressClaim of kind Service, the lock) and writes it into the Service's
// status.loadBalancer.ingress. kube-proxy delivers its traffic on every node; the agents only
// say which nodes the routers should send it to:
//   - externalTrafficPolicy Cluster: every node whose NodeConfig has the address's range (the
//     pool's nodes);
//   - externalTrafficPolicy Local: the nodes with a ready endpoint of the Service — `ready` is
//     false as soon as an endpoint starts terminating, so a draining node withdraws its route
//     while the endpoint still serves what it has (no connection attempt lost in a rollout);
//   - spec.externalIPs likewise, but only those claimed for the Service (never an arbitrary
//     external IP: CVE-2020-8554).
// Only addresses inside the NodeConfig's serviceCIDRs whose claim names the Service are
// announced; the NodeConfig's clusterIPCIDRs (the Service CIDRs) are announced as they are.
import {
  EndpointSlice,
  SERVICE_NAME_LABEL,
  Service,
  endpointReady,
  type Logger,
  type Protocol,
  type NodeConfigSpec,
} from '@flock/api';
import { canonicalAddress, cidrsContainIp } from '@flock/ipam';
import {
  Cache,
  ENDPOINT_SLICES,
  SERVICES,
  resourceListWatch,
  type KubeTransport,
  type MetricsOptions,
} from '@flock/kube';
import type { ClaimOf } from '../claims/ownership.js';

/** What the cache keeps of a Service: what the decision reads. */
export interface ServiceView {
  apiVersion: 'v1';
  kind: 'Service';
  metadata: { namespace: string; name: string; uid?: string; resourceVersion?: string };
  localTraffic: boolean;
  /** kube-proxy's health check of the Service (externalTrafficPolicy Local). */
  healthCheckNodePort?: number;
  /** status.loadBalancer.ingress IPs and spec.externalIPs, canonical. */
  addresses: string[];
  /** The Service's first port: the one kube-proxy's rules are looked up by. */
  port?: { protocol: Protocol; port: number };
}

/** What the cache keeps of an EndpointSlice: its Service and its ready endpoints on this node. */
export interface SliceView {
  apiVersion: 'discovery.k8s.io/v1';
  kind: 'EndpointSlice';
  metadata: { namespace: string; name: string; resourceVersion?: string };
  service: string;
  readyHere: number;
}

const canonical = (ips: readonly (string | undefined)[]) =>
  ips.flatMap((ip) => {
    const c = ip ? canonicalAddress(ip) : undefined;
    return c ? [c] : [];
  });

const CachedService = Service.transform((s): ServiceView => ({
  apiVersion: 'v1',
  kind: 'Service',
  metadata: {
    namespace: s.metadata.namespace,
    name: s.metadata.name,
    ...(s.metadata.uid ? { uid: s.metadata.uid } : {}),
    ...(s.metadata.resourceVersion ? { resourceVersion: s.metadata.resourceVersion } : {}),
  },
  localTraffic: s.spec?.['externalTrafficPolicy'] === 'Local',
  ...(typeof s.spec?.['healthCheckNodePort'] === 'number'
    ? { healthCheckNodePort: s.spec['healthCheckNodePort'] }
    : {}),
  addresses: [
    ...new Set(
      canonical([
        ...(s.status?.loadBalancer?.ingress ?? []).map((i) => i.ip),
        ...(s.spec?.externalIPs ?? []),
      ]),
    ),
  ],
  ...(s.spec?.ports?.[0]
    ? { port: { protocol: s.spec.ports[0].protocol ?? 'TCP', port: s.spec.ports[0].port } }
    : {}),
}));

/** The index of slices by their Service ("namespace/name"). */
export const BY_SERVICE = 'service';

/** Every Service of the cluster, trimmed as it enters the cache. */
export function serviceCache(
  transport: KubeTransport,
  logger: Logger,
  watchdogMs?: number,
  metrics?: MetricsOptions,
): Cache<ServiceView> {
  return new Cache<ServiceView>({
    source: resourceListWatch(transport, SERVICES),
    schema: CachedService,
    name: 'services',
    logger,
    ...(metrics ? { metrics } : {}),
    ...(watchdogMs ? { watchdogMs } : {}),
  });
}

/** Every EndpointSlice, kept as the count of its ready endpoints on `nodeName`. */
export function endpointSliceCache(
  transport: KubeTransport,
  nodeName: string,
  logger: Logger,
  watchdogMs?: number,
  metrics?: MetricsOptions,
): Cache<SliceView> {
  const schema = EndpointSlice.transform((s): SliceView => ({
    apiVersion: 'discovery.k8s.io/v1',
    kind: 'EndpointSlice',
    metadata: {
      namespace: s.metadata.namespace,
      name: s.metadata.name,
      ...(s.metadata.resourceVersion ? { resourceVersion: s.metadata.resourceVersion } : {}),
    },
    service: s.metadata.labels?.[SERVICE_NAME_LABEL] ?? '',
    readyHere: (s.endpoints ?? []).filter((e) => e.nodeName === nodeName && endpointReady(e))
      .length,
  }));
  return new Cache<SliceView>({
    source: resourceListWatch(transport, ENDPOINT_SLICES),
    schema,
    name: 'endpointslices',
    indexers: {
      [BY_SERVICE]: (s) => (s.service ? [`${s.metadata.namespace}/${s.service}`] : []),
    },
    logger,
    ...(metrics ? { metrics } : {}),
    ...(watchdogMs ? { watchdogMs } : {}),
  });
}

/** Why this node announces a Service address. */
export interface ServiceAnnouncement {
  /** "namespace/name" of the Service. */
  service: string;
  why: string;
}

export interface ServicePlan {
  /** Address → the Service and why, sorted by address. */
  addresses: Map<string, ServiceAnnouncement>;
  warnings: string[];
}

/** An address of a Service inside this node's Service ranges and claimed for that Service. */
export interface ClaimedServiceAddress {
  service: ServiceView;
  address: string;
}

/**
 * The addresses of `services` this node may announce at all: inside its Service ranges and
 * claimed for the Service. Everything else a namespace writes (spec.externalIPs of its choice,
 * a status copied from another Service) stops here, before anything asks kube-proxy about it.
 */
export function claimedServiceAddresses(input: {
  spec: NodeConfigSpec;
  services: Iterable<ServiceView>;
  claimOf: ClaimOf;
}): { claimed: ClaimedServiceAddress[]; warnings: string[] } {
  const ranges = input.spec.serviceCIDRs ?? [];
  const claimed: ClaimedServiceAddress[] = [];
  const warnings: string[] = [];
  if (!ranges.length) return { claimed, warnings };
  for (const service of input.services) {
    const { namespace, name } = service.metadata;
    for (const address of service.addresses) {
      if (!cidrsContainIp(ranges, address)) continue;
      const c = input.claimOf(address);
      if (
        c?.spec.kind === 'Service' &&
        c.spec.namespace === namespace &&
        c.spec.services?.includes(name)
      )
        claimed.push({ service, address });
      else
        warnings.push(`Service address ${address} of ${namespace}/${name} is not claimed for it`);
    }
  }
  return { claimed, warnings: warnings.sort() };
}

/** The Service addresses this node announces now, from those claimed (claimedServiceAddresses). */
export function planServiceAddresses(input: {
  claimed: readonly ClaimedServiceAddress[];
  /** Ready endpoints of a Service on this node. */
  readyHere: (namespace: string, name: string) => number;
  /** Does kube-proxy here deliver to them yet (its health check on this port)? Default: yes. */
  kubeProxyReady?: (healthCheckNodePort: number) => boolean;
  /** Do kube-proxy's rules here hold this address of the Service yet? Default: yes. */
  kubeProxyHas?: (address: string, port: NonNullable<ServiceView['port']>) => boolean;
}): Map<string, ServiceAnnouncement> {
  const addresses = new Map<string, ServiceAnnouncement>();
  for (const { service: svc, address: ip } of input.claimed) {
    const { namespace, name } = svc.metadata;
    const ready = svc.localTraffic ? input.readyHere(namespace, name) : 0;
    if (svc.localTraffic && ready === 0) continue;
    const port = svc.healthCheckNodePort;
    // Announced once kube-proxy delivers here (the gate asks it again meanwhile).
    if (svc.localTraffic && port !== undefined && input.kubeProxyReady?.(port) === false) continue;
    // Not before kube-proxy delivers the address itself (a new one is in its next sync).
    if (svc.port && input.kubeProxyHas?.(ip, svc.port) === false) continue;
    addresses.set(ip, {
      service: `${namespace}/${name}`,
      why: svc.localTraffic
        ? `externalTrafficPolicy Local: ${ready} ready endpoint${ready === 1 ? '' : 's'} here`
        : 'externalTrafficPolicy Cluster',
    });
  }
  return new Map([...addresses].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)));
}
