// What the fake API server knows about each resource (scope, status subresource, selectable
// fields, validation), and how it maps a REST path to a resource — the same path rules as the
// real server, so code that builds a wrong path fails in unit tests already.
import { KubeApiError } from '../src/core/errors.js';
import type { Ownership, Json } from './fake-apply.js';
import type { StoredEvent } from './fake-watch.js';
import {
  apiVersionOf,
  CONFIGMAPS,
  ENDPOINT_SLICES,
  CUSTOM_RESOURCE_DEFINITIONS,
  EVENTS,
  LEASES,
  NAMESPACES,
  NETWORK_POLICIES,
  NODES,
  PODS,
  SERVICES,
  type ResourceRef,
} from '../src/core/resource.js';
import { ADDRESSCLAIMS, NODECONFIGS, POOLS } from '../src/flock/clients.js';

export interface FakeResourceOptions {
  /** Writes to the main resource keep status; status is written through /status (default false). */
  statusSubresource?: boolean;
  /** Fields usable in field selectors besides metadata.name and metadata.namespace. */
  selectableFields?: string[];
  /** Refuse a write with 422 Invalid when this returns a message (like OpenAPI/CEL validation). */
  validate?: (obj: unknown) => string | undefined;
  /** List items omit apiVersion/kind, as for built-in types (default: group is core or *.k8s.io). */
  builtin?: boolean;
}

export type JsonObject = { [key: string]: Json };

export interface ResourceEntry {
  ref: ResourceRef;
  options: FakeResourceOptions;
  objects: Map<string, JsonObject>;
  owners: Map<string, Ownership>;
  /** Changes since the last compaction, oldest first. */
  history: StoredEvent[];
}

export const BUILTIN_RESOURCES: Array<[ResourceRef, FakeResourceOptions]> = [
  [
    PODS,
    {
      statusSubresource: true,
      selectableFields: [
        'spec.nodeName',
        'spec.restartPolicy',
        'spec.schedulerName',
        'spec.serviceAccountName',
        'spec.hostNetwork',
        'status.phase',
        'status.podIP',
        'status.nominatedNodeName',
      ],
    },
  ],
  [NODES, { statusSubresource: true, selectableFields: ['spec.unschedulable'] }],
  [NAMESPACES, { statusSubresource: true, selectableFields: ['status.phase'] }],
  [SERVICES, { statusSubresource: true }],
  [CONFIGMAPS, {}],
  [ENDPOINT_SLICES, {}],
  [LEASES, {}],
  [
    EVENTS,
    {
      selectableFields: [
        'reason',
        'type',
        'regarding.kind',
        'regarding.name',
        'regarding.namespace',
        'regarding.uid',
        'reportingController',
      ],
    },
  ],
  [NETWORK_POLICIES, {}],
  [CUSTOM_RESOURCE_DEFINITIONS, { statusSubresource: true }],
  [POOLS, { statusSubresource: true }],
  [NODECONFIGS, { statusSubresource: true }],
  [ADDRESSCLAIMS, { statusSubresource: true }],
];

export const resourceId = (group: string, version: string, plural: string) =>
  `${group}/${version}/${plural}`;

export const isBuiltinGroup = (group: string) => group === '' || group.endsWith('k8s.io');

export function apiError(code: number, reason: string, message: string): KubeApiError {
  return new KubeApiError(code, reason, message, {
    kind: 'Status',
    status: 'Failure',
    message,
    reason,
    code,
  });
}

export interface Route {
  entry: ResourceEntry;
  namespace?: string;
  name?: string;
  subresource?: string;
}

/** Resolve a REST path against the registered resources; 404 like the real server. */
export function route(resources: Map<string, ResourceEntry>, path: string): Route {
  const notFound = () =>
    apiError(404, 'NotFound', `the server could not find the requested resource (${path})`);
  let segs: string[];
  try {
    segs = path.split('/').filter(Boolean).map(decodeURIComponent);
  } catch {
    throw notFound();
  }
  let group: string;
  let version: string;
  let rest: string[];
  if (segs[0] === 'api' && segs.length >= 3) {
    [group, version, rest] = ['', segs[1] as string, segs.slice(2)];
  } else if (segs[0] === 'apis' && segs.length >= 4) {
    [group, version, rest] = [segs[1] as string, segs[2] as string, segs.slice(3)];
  } else throw notFound();
  let namespace: string | undefined;
  if (rest[0] === 'namespaces' && rest.length >= 3) {
    namespace = rest[1];
    rest = rest.slice(2);
  }
  if (rest.length > 3) throw notFound();
  const [plural, name, subresource] = rest as [string, string?, string?];
  const entry = resources.get(resourceId(group, version, plural));
  if (!entry) throw notFound();
  if (namespace !== undefined && !entry.ref.namespaced) throw notFound();
  // A namespaced object needs its namespace; a namespaced collection without one means "all".
  if (entry.ref.namespaced && name !== undefined && namespace === undefined) throw notFound();
  if (subresource !== undefined && !(subresource === 'status' && entry.options.statusSubresource)) {
    throw notFound();
  }
  return {
    entry,
    ...(namespace !== undefined ? { namespace } : {}),
    ...(name !== undefined ? { name } : {}),
    ...(subresource !== undefined ? { subresource } : {}),
  };
}

/**
 * Discovery: the APIResourceList of /api/<v> or /apis/<group>/<v>, or undefined when `path` is
 * not a discovery path or nothing of that group/version is registered (the server's 404).
 */
export function discovery(
  resources: Map<string, ResourceEntry>,
  path: string,
): JsonObject | undefined {
  const segs = path.split('/').filter(Boolean);
  let group: string;
  let version: string;
  if (segs[0] === 'api' && segs.length === 2) [group, version] = ['', segs[1] as string];
  else if (segs[0] === 'apis' && segs.length === 3)
    [group, version] = [segs[1] as string, segs[2] as string];
  else return undefined;
  const served = [...resources.values()].filter(
    (e) => e.ref.group === group && e.ref.version === version,
  );
  if (!served.length) return undefined;
  return {
    kind: 'APIResourceList',
    apiVersion: 'v1',
    groupVersion: group ? `${group}/${version}` : version,
    resources: served.flatMap((e) => {
      const main = { name: e.ref.plural, namespaced: e.ref.namespaced, kind: e.ref.kind };
      return e.options.statusSubresource
        ? [main, { ...main, name: `${e.ref.plural}/status` }]
        : [main];
    }),
  };
}

export const entryApiVersion = (e: ResourceEntry) => apiVersionOf(e.ref);

/** The store key of a routed object. */
export const keyOf = (r: Route) => (r.namespace ? `${r.namespace}/${r.name}` : (r.name as string));

export const notFound = (r: Route) =>
  apiError(404, 'NotFound', `${r.entry.ref.plural} "${r.name}" not found`);
