// The NodeConfig the operator wants for one node, and whether the stored one already says it.
import {
  API_VERSION,
  defaultInterNodePrefix,
  IP_ALGO_ANNOTATION,
  NODECONFIG_KIND,
  OPERATOR_FIELD_MANAGER,
  matchesSelector,
  type NodeBgpPeer,
  type NodeConfig,
  type NodeConfigSpec,
  type Pool,
} from '@flock/api';
import { deepEqual } from './equal.js';
import { QUARANTINE_FINALIZER } from './names.js';
import type { Node } from './nodes.js';
import type { FloatingList } from './overlaps.js';

// A type alias, not an interface: it must fit ObjectMeta's loose ownerReferences.
type OwnerReference = {
  apiVersion: 'v1';
  kind: 'Node';
  name: string;
  uid: string;
  blockOwnerDeletion: true;
};

/** The operator's full intent for one NodeConfig (a server-side apply body). */
export interface NodeConfigApply {
  apiVersion: typeof API_VERSION;
  kind: typeof NODECONFIG_KIND;
  metadata: {
    name: string;
    annotations?: Record<string, string>;
    ownerReferences: OwnerReference[];
    finalizers: string[];
  };
  spec: NodeConfigSpec;
}

interface NodePrefixes {
  cidr6: string;
  cidr4?: string | undefined;
}

/** The pool's BGP peers whose nodeSelector selects this node (absent selector: every node). */
function peersFor(pool: Pool, node: Node): NodeBgpPeer[] {
  return pool.spec.bgp.peers
    .filter((p) => matchesSelector(p.nodeSelector, node.metadata.labels))
    .map(({ nodeSelector: _selector, ...peer }) => peer);
}

/** Keys of spec.bgp the operator copies from the Pool as they are, when the Pool sets them. */
const ROUTE_SETTINGS = ['localPreference', 'communities', 'allowedPodCommunities'] as const;

/** The Pool's route settings (local preference, communities) that every node of it uses. */
function routeSettings(
  pool: Pool,
): Partial<Pick<NodeConfigSpec['bgp'], (typeof ROUTE_SETTINGS)[number]>> {
  const bgp = pool.spec.bgp;
  return Object.fromEntries(
    ROUTE_SETTINGS.flatMap((k) => (bgp[k] === undefined ? [] : [[k, bgp[k]]])),
  );
}

type FloatingFields = Pick<
  NodeConfigSpec,
  'pinnedCIDRs' | 'anycastCIDRs' | 'pinnedGrants' | 'anycastGrants' | 'serviceCIDRs'
>;

/**
 * A floating list of the pool as the NodeConfig carries it: its ranges and grants (Service
 * ranges without grants: the agents announce what the operator assigned), unless the list is
 * withdrawn (it overlaps an older pool's: overlaps.ts).
 */
function floating(
  pool: Pool,
  list: FloatingList,
  withdrawn: ReadonlySet<FloatingList>,
): FloatingFields {
  const ranges = pool.spec[list];
  if (!ranges || withdrawn.has(list)) return {};
  if (list === 'services') return ranges.cidrs.length ? { serviceCIDRs: [...ranges.cidrs] } : {};
  return {
    [`${list}CIDRs`]: [...ranges.cidrs],
    ...(ranges.grants ? { [`${list}Grants`]: structuredClone(ranges.grants) } : {}),
  };
}

/**
 * Which pods get IPv4 and whether it is private (the Pool's ipv4 assign, grants and mode), when
 * the node has an IPv4 slice. Always, Public, without grants is left out: an agent reads its
 * absence the same way, and NodeConfigs written before assign existed stay as they are.
 */
function ipv4(pool: Pool, cidr4: string | undefined): Pick<NodeConfigSpec, 'ipv4'> {
  const range = pool.spec.ipv4;
  if (!range || !cidr4) return {};
  const { assign, grants, mode } = range;
  if (assign === 'Always' && grants === undefined && mode === 'Public') return {};
  return {
    ipv4: {
      assign,
      ...(grants ? { grants: structuredClone(grants) } : {}),
      // Private: the whole range stays unNATed between the pool's pods, carried between nodes
      // in the translation prefix (the Pool's, or one derived from its UID: never none).
      ...(mode === 'Private'
        ? {
            mode,
            clusterCIDRs: [range.cidr],
            interNodePrefix:
              range.interNodePrefix ??
              defaultInterNodePrefix(pool.metadata.uid ?? pool.metadata.name),
          }
        : {}),
    },
  };
}

/**
 * NAT64 (the Pool's nat64) with the cluster's own IPv4 ranges, which nothing translated may
 * reach (a pod would arrive there as its node's address).
 */
function nat64(pool: Pool): Pick<NodeConfigSpec, 'nat64'> {
  const { nat64, ipv4, pinned, anycast, services } = pool.spec;
  if (!nat64) return {};
  const ranges = [
    ...(ipv4 ? [ipv4.cidr] : []),
    ...(pinned?.cidrs ?? []),
    ...(anycast?.cidrs ?? []),
    ...(services?.cidrs ?? []),
    ...(services?.clusterIPs ?? []),
  ].filter((c) => !c.includes(':'));
  const clusterCIDRs = [...new Set(ranges)];
  return { nat64: { ...nat64, ...(clusterCIDRs.length ? { clusterCIDRs } : {}) } };
}

/** The cluster's Service CIDRs every node of the pool announces (never withdrawn: shared). */
function clusterIPs(pool: Pool): Pick<NodeConfigSpec, 'clusterIPCIDRs'> {
  const cidrs = pool.spec.services?.clusterIPs;
  return cidrs?.length ? { clusterIPCIDRs: [...cidrs] } : {};
}

export function desiredNodeConfig(
  pool: Pool,
  node: Node,
  prefixes: NodePrefixes,
  withdrawn: ReadonlySet<FloatingList> = new Set(),
): NodeConfigApply {
  const { spec } = pool;
  return {
    apiVersion: API_VERSION,
    kind: NODECONFIG_KIND,
    metadata: {
      name: node.metadata.name,
      ...(spec.ipAlgo ? { annotations: { [IP_ALGO_ANNOTATION]: spec.ipAlgo } } : {}),
      // The garbage collector deletes the NodeConfig with its Node; the finalizer then lets
      // the operator quarantine the prefixes before the object is gone.
      ownerReferences: [
        {
          apiVersion: 'v1',
          kind: 'Node',
          name: node.metadata.name,
          uid: node.metadata.uid,
          blockOwnerDeletion: true,
        },
      ],
      finalizers: [QUARANTINE_FINALIZER],
    },
    spec: {
      pool: pool.metadata.name,
      cidr6: prefixes.cidr6,
      ...(prefixes.cidr4 ? { cidr4: prefixes.cidr4 } : {}),
      ...ipv4(pool, prefixes.cidr4),
      ...nat64(pool),
      ...floating(pool, 'pinned', withdrawn),
      ...floating(pool, 'anycast', withdrawn),
      ...floating(pool, 'services', withdrawn),
      ...clusterIPs(pool),
      bgp: { asn: spec.bgp.asn, peers: peersFor(pool, node), ...routeSettings(pool) },
    },
  };
}

interface ManagedFieldsEntry {
  manager?: unknown;
  operation?: unknown;
  subresource?: unknown;
  fieldsV1?: unknown;
}

/**
 * Did the operator apply the field at `path` (e.g. ['spec', 'pinnedCIDRs'])? Read from
 * managedFields; when the server sent none (as the in-memory fake), assume it did: the apply
 * that follows is then a harmless no-op.
 */
function appliedByOperator(obj: NodeConfig, path: string[]): boolean {
  const managed = (obj.metadata as { managedFields?: unknown }).managedFields;
  if (!Array.isArray(managed)) return true;
  return (managed as ManagedFieldsEntry[]).some((m) => {
    if (m.manager !== OPERATOR_FIELD_MANAGER || m.operation !== 'Apply' || m.subresource) {
      return false;
    }
    let node: unknown = m.fieldsV1;
    for (const segment of path) {
      if (typeof node !== 'object' || node === null) return false;
      node = (node as Record<string, unknown>)[`f:${segment}`];
    }
    return node !== undefined;
  });
}

/**
 * An optional field the operator copies from the Pool: set and different, or dropped by the
 * Pool while the operator had applied it (a value another manager wrote there is left alone).
 */
function differs(current: NodeConfig, path: string[], cur: unknown, want: unknown): boolean {
  if (want !== undefined) return !deepEqual(cur, want);
  return cur !== undefined && appliedByOperator(current, path);
}

/** Optional spec fields the operator copies from the Pool. */
const COPIED_FIELDS = [
  'ipv4',
  'nat64',
  'pinnedCIDRs',
  'anycastCIDRs',
  'pinnedGrants',
  'anycastGrants',
  'serviceCIDRs',
  'clusterIPCIDRs',
] as const;

/** Does the stored NodeConfig differ from what the operator would apply? */
export function needsApply(current: NodeConfig, desired: NodeConfigApply): boolean {
  const cur = current.spec;
  const want = desired.spec;
  if (cur.pool !== want.pool || cur.cidr6 !== want.cidr6 || cur.cidr4 !== want.cidr4) return true;
  if (cur.bgp.asn !== want.bgp.asn || !deepEqual(cur.bgp.peers, want.bgp.peers)) return true;
  for (const key of COPIED_FIELDS) {
    if (differs(current, ['spec', key], cur[key], want[key])) return true;
  }
  for (const key of ROUTE_SETTINGS) {
    if (differs(current, ['spec', 'bgp', key], cur.bgp[key], want.bgp[key])) return true;
  }
  const algo = desired.metadata.annotations?.[IP_ALGO_ANNOTATION];
  const curAlgo = current.metadata.annotations?.[IP_ALGO_ANNOTATION];
  if (algo !== curAlgo) {
    if (algo !== undefined) return true;
    if (appliedByOperator(current, ['metadata', 'annotations', IP_ALGO_ANNOTATION])) return true;
  }
  const [owner] = desired.metadata.ownerReferences;
  const refs = (current.metadata.ownerReferences ?? []) as Record<string, unknown>[];
  if (!refs.some((r) => r['uid'] === owner?.uid && r['blockOwnerDeletion'] === true)) return true;
  const finalizers = (current.metadata as { finalizers?: unknown }).finalizers;
  return !(Array.isArray(finalizers) && finalizers.includes(QUARANTINE_FINALIZER));
}

/** Does the NodeConfig name a Node as its owner (so the garbage collector will delete it)? */
export function hasNodeOwner(nc: NodeConfig): boolean {
  return (nc.metadata.ownerReferences ?? []).some(
    (r) => r['kind'] === 'Node' && r['apiVersion'] === 'v1',
  );
}

/** The finalizers of a NodeConfig (ObjectMeta passes them through unparsed). */
export function finalizersOf(nc: NodeConfig): string[] {
  const f = (nc.metadata as { finalizers?: unknown }).finalizers;
  return Array.isArray(f) ? f.filter((x): x is string => typeof x === 'string') : [];
}
