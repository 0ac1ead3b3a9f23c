// Typed builders of the objects tests keep writing: a NodeConfig, a Pool, a Pod. Each default is
// the smallest valid object — what every such object must have — so that a test states what it
// relies on beyond that, and a complete spec passed in comes out exactly as given.
//
// Overrides replace field by field (spec and metadata one level deep, `spec.bgp` as a whole);
// a field set to `undefined` is left out of the object.
import type { IpAlgo } from '../src/annotations.js';
import { API_VERSION, IP_ALGO_ANNOTATION, NODECONFIG_KIND, POOL_KIND } from '../src/names.js';
import type { ObjectMeta } from '../src/meta.js';
import type { NodeConfig, NodeConfigSpec, NodeConfigStatus } from '../src/nodeconfig.js';
import type { Pod, Protocol } from '../src/pod.js';
import type { Pool, PoolSpec, PoolStatus } from '../src/pool.js';

/** The fields of `base` with those of `over` in their place; undefined ones left out. */
function merged<T extends object>(base: T, over: Partial<T> = {}): T {
  const out = { ...base, ...over };
  for (const key of Object.keys(out) as (keyof T)[]) {
    if (out[key] === undefined) delete out[key];
  }
  return out;
}

/** What a test sets of a flock object: each given field in place of the default. */
export interface Overrides<Spec, Status> {
  /** metadata.name (default: `node-a` for a NodeConfig, `dc1` for a Pool). */
  name?: string;
  metadata?: Partial<ObjectMeta>;
  /** Merged over the default spec, field by field. */
  spec?: Partial<Spec>;
  status?: Status;
}

function flockObject<Kind extends string, Spec extends object, Status>(
  kind: Kind,
  name: string,
  spec: Spec,
  o: Overrides<Spec, Status>,
): {
  apiVersion: typeof API_VERSION;
  kind: Kind;
  metadata: ObjectMeta;
  spec: Spec;
  status?: Status;
} {
  return {
    apiVersion: API_VERSION,
    kind,
    metadata: merged({ name: o.name ?? name }, o.metadata),
    spec: merged(spec, o.spec),
    ...(o.status ? { status: o.status } : {}),
  };
}

export interface NodeConfigOverrides extends Overrides<NodeConfigSpec, NodeConfigStatus> {
  /** The node's default interface-ID algorithm (its ip-algo annotation), e.g. `sequential`. */
  ipAlgo?: IpAlgo;
}

/** A valid NodeConfig: node `node-a`'s IPv6 /64 of pool `dc1`, ASN 64512, no peers. */
export function nodeConfig({ ipAlgo, ...o }: NodeConfigOverrides = {}): NodeConfig {
  const spec: NodeConfigSpec = {
    pool: 'dc1',
    cidr6: '2001:db8:100::/64',
    bgp: { asn: 64512, peers: [] },
  };
  if (ipAlgo) {
    const annotations = { ...o.metadata?.annotations, [IP_ALGO_ANNOTATION]: ipAlgo };
    o.metadata = { ...o.metadata, annotations };
  }
  return flockObject(NODECONFIG_KIND, 'node-a', spec, o);
}

export type PoolOverrides = Overrides<PoolSpec, PoolStatus>;

/** A valid Pool `dc1` for every node: /64s of `2001:db8:100::/48`, ASN 64512, no peers. */
export function pool(o: PoolOverrides = {}): Pool {
  const spec: PoolSpec = {
    ipv6: { cidr: '2001:db8:100::/48', nodePrefixLength: 64 },
    bgp: { asn: 64512, peers: [] },
  };
  return flockObject(POOL_KIND, 'dc1', spec, o);
}

export interface PodOverrides {
  /** Default `web`. */
  name?: string;
  /** Default `default`. */
  namespace?: string;
  /** Default `uid-<name>`. */
  uid?: string;
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
  /** Default `node-a`; `undefined` leaves the pod unscheduled. */
  nodeName?: string | undefined;
  /** Default `Running`. */
  phase?: string;
  /** The Ready condition; default true. */
  ready?: boolean;
  /** status.podIPs; none by default. */
  podIPs?: string[];
  /** Ports of its one container `main`; without `ports` the pod has no containers. */
  ports?: { name?: string; port: number; protocol?: Protocol }[];
  /** Being deleted: a deletionTimestamp (this one, or a fixed time for `true`). */
  terminating?: boolean | string;
}

/** A running, Ready Pod `default/web` on node `node-a`, as the API server serves it. */
export function pod(o: PodOverrides = {}): Pod {
  const name = o.name ?? 'web';
  const deletionTimestamp =
    o.terminating === true ? '2026-08-16T09:00:00Z' : o.terminating || undefined;
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: merged<Pod['metadata']>(
      { namespace: o.namespace ?? 'default', name, uid: o.uid ?? `uid-${name}` },
      { labels: o.labels, annotations: o.annotations, deletionTimestamp },
    ),
    spec: merged<NonNullable<Pod['spec']>>(
      {
        nodeName: 'node-a',
        containers: o.ports
          ? [
              {
                name: 'main',
                ports: o.ports.map((p) =>
                  merged({ name: p.name, containerPort: p.port, protocol: p.protocol }),
                ),
              },
            ]
          : [],
      },
      'nodeName' in o ? { nodeName: o.nodeName } : {},
    ),
    status: merged<NonNullable<Pod['status']>>(
      {
        phase: o.phase ?? 'Running',
        conditions: [{ type: 'Ready', status: o.ready === false ? 'False' : 'True' }],
      },
      { podIPs: o.podIPs?.map((ip) => ({ ip })) },
    ),
  };
}

/** A grant of floating ranges to one namespace, by name (the label the API server sets). */
export const grantTo = (namespace: string) => ({
  namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': namespace } },
});
