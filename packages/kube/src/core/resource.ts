// Which API resource a request is about (group/version/plural), the REST paths of its objects,
// and the namespace/name keys the cache and the work queue use.
import {
  CLUSTER_NETWORK_POLICY_GROUP,
  CLUSTER_NETWORK_POLICY_PLURAL,
  CLUSTER_NETWORK_POLICY_VERSION,
} from '@flock/api';

export interface ResourceRef {
  /** API group; '' for the core group (pods, nodes, configmaps). */
  group: string;
  version: string;
  /** Lower-case plural as in the URL, e.g. "pods". */
  plural: string;
  kind: string;
  namespaced: boolean;
}

/** The minimum every object has; the cache and queue only rely on this. */
export interface KubeObject {
  apiVersion?: string;
  kind?: string;
  metadata: {
    name?: string;
    namespace?: string;
    uid?: string;
    resourceVersion?: string;
    generation?: number;
    labels?: Record<string, string>;
    annotations?: Record<string, string>;
  };
}

export const apiVersionOf = (r: ResourceRef): string =>
  r.group ? `${r.group}/${r.version}` : r.version;

/**
 * A name or namespace that is safe as one URL path segment (the API server's own rule: not "."
 * or "..", no "/" or "%"), and at most 253 characters.
 */
export function assertPathSegment(what: string, value: string): void {
  if (!value || value.length > 253 || value === '.' || value === '..' || /[/%]/.test(value)) {
    throw new Error(`invalid ${what} ${JSON.stringify(value)}`);
  }
}

interface PathOptions {
  namespace?: string;
  name?: string;
  /** e.g. "status". */
  subresource?: string;
}

/** REST path of a collection, an object or a subresource, e.g. /api/v1/namespaces/ns/pods/p. */
export function resourcePath(r: ResourceRef, o: PathOptions = {}): string {
  const parts = r.group ? ['apis', r.group, r.version] : ['api', r.version];
  if (o.namespace !== undefined) {
    if (!r.namespaced) throw new Error(`${r.plural} are cluster-scoped: no namespace allowed`);
    assertPathSegment('namespace', o.namespace);
    parts.push('namespaces', o.namespace);
  }
  parts.push(r.plural);
  if (o.name !== undefined) {
    assertPathSegment('name', o.name);
    parts.push(o.name);
  }
  if (o.subresource !== undefined) {
    if (o.name === undefined) throw new Error('a subresource needs an object name');
    assertPathSegment('subresource', o.subresource);
    parts.push(o.subresource);
  }
  return '/' + parts.map(encodeURIComponent).join('/');
}

/** Object path; namespaced resources need a namespace. */
export function objectPath(r: ResourceRef, name: string, namespace?: string, sub?: string): string {
  if (r.namespaced && !namespace) throw new Error(`${r.kind} ${name}: namespace required`);
  return resourcePath(r, {
    name,
    ...(r.namespaced ? { namespace } : {}),
    ...(sub ? { subresource: sub } : {}),
  });
}

/** The cache/queue key of an object: "namespace/name", or "name" when cluster-scoped. */
export function objectKey(obj: KubeObject): string {
  const { name, namespace } = obj.metadata;
  if (!name) throw new Error('object has no metadata.name');
  // join, not a template: one flat string, where `${a}/${b}` keeps two (caches hold one a pod).
  return namespace ? [namespace, name].join('/') : name;
}

// The resources flock's components use.
export const PODS: ResourceRef = {
  group: '',
  version: 'v1',
  plural: 'pods',
  kind: 'Pod',
  namespaced: true,
};
export const NODES: ResourceRef = {
  group: '',
  version: 'v1',
  plural: 'nodes',
  kind: 'Node',
  namespaced: false,
};
export const NAMESPACES: ResourceRef = {
  group: '',
  version: 'v1',
  plural: 'namespaces',
  kind: 'Namespace',
  namespaced: false,
};
export const SERVICES: ResourceRef = {
  group: '',
  version: 'v1',
  plural: 'services',
  kind: 'Service',
  namespaced: true,
};
export const ENDPOINT_SLICES: ResourceRef = {
  group: 'discovery.k8s.io',
  version: 'v1',
  plural: 'endpointslices',
  kind: 'EndpointSlice',
  namespaced: true,
};
export const DEPLOYMENTS: ResourceRef = {
  group: 'apps',
  version: 'v1',
  plural: 'deployments',
  kind: 'Deployment',
  namespaced: true,
};
export const CONFIGMAPS: ResourceRef = {
  group: '',
  version: 'v1',
  plural: 'configmaps',
  kind: 'ConfigMap',
  namespaced: true,
};
export const SECRETS: ResourceRef = {
  group: '',
  version: 'v1',
  plural: 'secrets',
  kind: 'Secret',
  namespaced: true,
};
export const LEASES: ResourceRef = {
  group: 'coordination.k8s.io',
  version: 'v1',
  plural: 'leases',
  kind: 'Lease',
  namespaced: true,
};
export const EVENTS: ResourceRef = {
  group: 'events.k8s.io',
  version: 'v1',
  plural: 'events',
  kind: 'Event',
  namespaced: true,
};
export const NETWORK_POLICIES: ResourceRef = {
  group: 'networking.k8s.io',
  version: 'v1',
  plural: 'networkpolicies',
  kind: 'NetworkPolicy',
  namespaced: true,
};
/** sig-network's ClusterNetworkPolicy (sigs.k8s.io/network-policy-api; an optional CRD). */
export const CLUSTER_NETWORK_POLICIES: ResourceRef = {
  group: CLUSTER_NETWORK_POLICY_GROUP,
  version: CLUSTER_NETWORK_POLICY_VERSION,
  plural: CLUSTER_NETWORK_POLICY_PLURAL,
  kind: 'ClusterNetworkPolicy',
  namespaced: false,
};
export const CUSTOM_RESOURCE_DEFINITIONS: ResourceRef = {
  group: 'apiextensions.k8s.io',
  version: 'v1',
  plural: 'customresourcedefinitions',
  kind: 'CustomResourceDefinition',
  namespaced: false,
};
function metadataOf(item: unknown): Record<string, unknown> | undefined {
  if (item === null || typeof item !== 'object') return undefined;
  const meta = (item as { metadata?: unknown }).metadata;
  return meta !== null && typeof meta === 'object' ? (meta as Record<string, unknown>) : undefined;
}

/** The key of an unvalidated object, or undefined when it has no usable name. */
export function rawObjectKey(item: unknown): string | undefined {
  const meta = metadataOf(item);
  if (typeof meta?.['name'] !== 'string' || !meta['name']) return undefined;
  const ns = meta['namespace'];
  return objectKey({
    metadata: { name: meta['name'], ...(typeof ns === 'string' && ns ? { namespace: ns } : {}) },
  });
}

/** The resourceVersion of an unvalidated object, if it has one. */
export function rawResourceVersion(item: unknown): string | undefined {
  const rv = metadataOf(item)?.['resourceVersion'];
  return typeof rv === 'string' && rv ? rv : undefined;
}
