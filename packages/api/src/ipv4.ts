// Who gets IPv4 on a node: every pod (Always, flock's behaviour before on-request IPv4) or only
// the pods that ask by annotation from namespaces the Pool grants it (OnRequest). Public IPv4 is
// scarce: a node's slice of 14 addresses serves 14 pods under Always and any number of
// IPv6-only pods with a few IPv4 ones under OnRequest.
import { z } from 'zod';
import type { Parsed } from './annotations.js';
import { MAX_GRANTS, namespaceGrantRule, namespaceGrantShape } from './floating.js';
import { InterNodePrefix } from './inter-node.js';
import { cidrContainsIp, cidrString } from './net.js';
import { withRules } from './rules.js';

export const Ipv4Assign = z.enum(['Always', 'OnRequest']);
export type Ipv4Assign = z.infer<typeof Ipv4Assign>;
export const DEFAULT_IPV4_ASSIGN: Ipv4Assign = 'Always';

/** The namespaces whose pods may ask for IPv4 under OnRequest. */
export const NamespaceGrant = withRules(
  z.object(namespaceGrantShape('ask', 'any tenant can then use up the slices.')),
  [namespaceGrantRule],
).describe('Which namespaces may ask for an IPv4 address.');
export type NamespaceGrant = z.infer<typeof NamespaceGrant>;

const assignDescription =
  'Which pods get an IPv4 address: Always (default) every pod; OnRequest only pods with the annotation flock.fritzlab.net/ipv4: public, of namespaces ipv4.grants names; the others are IPv6-only.';
const grantsDescription =
  'With assign: OnRequest, the namespaces whose pods may ask for IPv4; absent or empty: none may.';

/** The fields a Pool's ipv4 and a NodeConfig's ipv4 share (the operator copies them). */
export const ipv4AssignShape = {
  assign: Ipv4Assign.default(DEFAULT_IPV4_ASSIGN).describe(assignDescription),
  grants: z.array(NamespaceGrant).max(MAX_GRANTS).optional().describe(grantsDescription),
};

/**
 * Public: routable addresses, each node announces its slice. Private: private space, never
 * announced, SNAT to the node's IPv4 address for destinations outside the cluster.
 */
export const Ipv4Mode = z.enum(['Public', 'Private']);
export type Ipv4Mode = z.infer<typeof Ipv4Mode>;

/** A node's IPv4 slice by default: 14 public addresses are scarce, 254 private ones are not. */
export const DEFAULT_IPV4_NODE_PREFIX: Record<Ipv4Mode, number> = { Public: 28, Private: 24 };
/** The slice length in force, as CEL over a Pool's ipv4. */
export const IPV4_NODE_PREFIX_CEL = `(has(self.nodePrefixLength) ? self.nodePrefixLength : (self.mode == 'Private' ? ${DEFAULT_IPV4_NODE_PREFIX.Private} : ${DEFAULT_IPV4_NODE_PREFIX.Public}))`;
/** The slice length in force of a Pool's ipv4. */
export const ipv4NodePrefixLength = (v: {
  mode?: Ipv4Mode;
  nodePrefixLength?: number | undefined;
}) => v.nodePrefixLength ?? DEFAULT_IPV4_NODE_PREFIX[v.mode ?? 'Public'];

/** Private addresses are nothing to ask for: every pod of a Private pool gets one. */
export const privateAssignsAlwaysRule = {
  cel: "self.mode == 'Public' || self.assign == 'Always'",
  message:
    'ipv4.assign: OnRequest is for public IPv4 (mode: Public); every pod of a Private pool gets an address',
  field: 'assign',
  check: (v: { mode: Ipv4Mode; assign: Ipv4Assign }) =>
    v.mode === 'Public' || v.assign === 'Always',
};

/** Grants mean something only when pods ask: with Always they would be a silent no-op. */
export const grantsNeedOnRequestRule = {
  cel: "self.assign == 'OnRequest' || !has(self.grants)",
  message: 'ipv4.grants applies to assign: OnRequest only (with Always every pod gets IPv4)',
  field: 'grants',
  check: (v: { assign: Ipv4Assign; grants?: unknown }) =>
    v.assign === 'OnRequest' || v.grants === undefined,
};

/** A translation prefix carries a Private pool's addresses only: a Public one is routed as is. */
export const interNodeNeedsPrivateRule = {
  cel: "self.mode == 'Private' || !has(self.interNodePrefix)",
  message:
    'ipv4.interNodePrefix applies to mode: Private (public addresses are routed as they are)',
  field: 'interNodePrefix',
  check: (v: { mode: Ipv4Mode; interNodePrefix?: string | undefined }) =>
    v.mode === 'Private' || v.interNodePrefix === undefined,
};

/** The most IPv4 ranges a node keeps unNATed. */
export const MAX_CLUSTER_CIDRS = 16;

/** A NodeConfig's IPv4 assignment and mode (copied from its Pool's ipv4). */
export const NodeIpv4 = withRules(
  z.object({
    ...ipv4AssignShape,
    mode: Ipv4Mode.optional().describe('Public (absent) or Private (copied from the Pool).'),
    clusterCIDRs: z
      .array(cidrString('ipv4.clusterCIDRs[]', 4))
      .max(MAX_CLUSTER_CIDRS)
      .optional()
      .describe(
        "Private mode: destinations pods reach with their own address, unNATed (the Pool's ipv4.cidr).",
      ),
    interNodePrefix: InterNodePrefix.optional().describe(
      "Private mode: the IPv6 /96 that carries the pool's IPv4 between nodes (the Pool's ipv4.interNodePrefix, or one derived from its UID).",
    ),
  }),
  [grantsNeedOnRequestRule],
).describe(
  "Which pods get an IPv4 address from cidr4, and whether it is private (copied from the Pool's ipv4); absent: every pod, public.",
);
export type NodeIpv4 = z.infer<typeof NodeIpv4>;

/** Values of the ipv4 pod annotation: ask for a public IPv4 address, or for none at all. */
export const Ipv4Request = z.enum(['public', 'none']);
export type Ipv4Request = z.infer<typeof Ipv4Request>;

/** ipv4 annotation: one value; surrounding whitespace is ignored, anything else is invalid. */
export function parseIpv4Request(raw: string | undefined): Parsed<Ipv4Request> | undefined {
  if (raw === undefined || raw.trim() === '') return undefined;
  const parsed = Ipv4Request.safeParse(raw.trim());
  return parsed.success
    ? { ok: true, value: parsed.data }
    : {
        ok: false,
        error: `${JSON.stringify(raw)} is not one of ${Ipv4Request.options.join(', ')}`,
      };
}

/**
 * How a pod reaches IPv4: its own public address, a private one (SNAT to the node's address
 * beyond the cluster), through its node's NAT64 (IPv6 only, on a node with nat64), or not at all.
 */
export const PodIpv4Mode = z.enum(['public', 'private', 'nat64', 'none']);
export type PodIpv4Mode = z.infer<typeof PodIpv4Mode>;

/**
 * A pod's IPv4 mode, from what it holds and its node's spec: an address of a Private node's
 * slice is private; any other (a public slice, a pinned address) is public; none on a node with
 * NAT64 is nat64.
 */
export function podIpv4Mode(
  entry: { ip4?: string | undefined },
  node: {
    cidr4?: string | undefined;
    ipv4?: { mode?: Ipv4Mode | undefined } | undefined;
    nat64?: object | undefined;
  },
): PodIpv4Mode {
  if (entry.ip4 === undefined) return node.nat64 ? 'nat64' : 'none';
  const isPrivate =
    node.ipv4?.mode === 'Private' &&
    node.cidr4 !== undefined &&
    cidrContainsIp(node.cidr4, entry.ip4);
  return isPrivate ? 'private' : 'public';
}
