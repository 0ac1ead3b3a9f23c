// Pool: address ranges, BGP settings and the nodes they apply to. Cluster-scoped, written by users.
import { z } from 'zod';
import { IpAlgo } from './annotations.js';
import {
  DEFAULT_IPV4_NODE_PREFIX,
  IPV4_NODE_PREFIX_CEL,
  Ipv4Mode,
  grantsNeedOnRequestRule,
  interNodeNeedsPrivateRule,
  ipv4AssignShape,
  ipv4NodePrefixLength,
  privateAssignsAlwaysRule,
} from './ipv4.js';
import { InterNodePrefix, interNodePrefixDescription } from './inter-node.js';
import { Nat64 } from './nat64.js';
import { FloatingRanges, ServiceRanges } from './floating.js';
import { Asn, BgpRouteSettings, MAX_PEERS, PoolBgpPeer, uniquePeersRule } from './bgp.js';
import { Condition, LabelSelector, ObjectMeta } from './meta.js';
import { MAX_ADDRESS_LENGTH, cidrString, splitCidr } from './net.js';
import { floatingRangeRules } from './pool-rules.js';
import { withRules } from './rules.js';
import { API_VERSION, POOL_KIND } from './names.js';

/** A pool holds at most 2^32 node prefixes: nobody has more nodes, and counts stay exact. */
export const MAX_NODE_PREFIX_BITS = 32;

/**
 * The rules of a family's node prefix length. `length` is the CEL of the length in force (IPv4's
 * default depends on the mode), `resolve` the same in TypeScript.
 */
function nodePrefixRules<T extends { cidr: string }>(
  family: 4 | 6,
  length: string,
  resolve: (v: T) => number,
) {
  const name = `ipv${family}`;
  return [
    {
      cel: `!isCIDR(self.cidr) || ${length} > cidr(self.cidr).prefixLength()`,
      message: `${name}.nodePrefixLength must be longer than the pool's prefix length`,
      field: 'nodePrefixLength',
      check: (v: T) => {
        const p = splitCidr(v.cidr);
        return !p || resolve(v) > p.prefixLength;
      },
    },
    {
      cel: `!isCIDR(self.cidr) || ${length} - cidr(self.cidr).prefixLength() <= ${MAX_NODE_PREFIX_BITS}`,
      message: `${name}: a pool holds at most 2^${MAX_NODE_PREFIX_BITS} node prefixes; shorten nodePrefixLength or lengthen the pool's prefix`,
      field: 'nodePrefixLength',
      check: (v: T) => {
        const p = splitCidr(v.cidr);
        return !p || resolve(v) - p.prefixLength <= MAX_NODE_PREFIX_BITS;
      },
    },
  ];
}

const PoolIPv6 = withRules(
  z.object({
    cidr: cidrString('ipv6.cidr', 6).describe(
      'The IPv6 range node prefixes are carved from, e.g. 2001:db8:100::/48.',
    ),
    nodePrefixLength: z
      .int()
      .min(48)
      .max(120)
      .default(64)
      .describe(
        "Length of each node's prefix (48..120, default 64); each pod gets one /128 from it.",
      ),
  }),
  nodePrefixRules(
    6,
    'self.nodePrefixLength',
    (v: { cidr: string; nodePrefixLength: number }) => v.nodePrefixLength,
  ),
).describe('IPv6 addressing: every node gets one prefix of nodePrefixLength from cidr.');

const PoolIPv4 = withRules(
  z.object({
    ...ipv4AssignShape,
    cidr: cidrString('ipv4.cidr', 4).describe(
      'The IPv4 range node slices are carved from, e.g. 192.0.2.0/24.',
    ),
    mode: Ipv4Mode.default('Public').describe(
      "Public (default): the addresses are routable, every node announces its slice. Private: the range is private space, never announced; pods reach destinations outside the cluster from the node's IPv4 address (SNAT), and each other with their own addresses (between nodes translated to IPv6 at interNodePrefix).",
    ),
    nodePrefixLength: z
      .int()
      .min(16)
      .max(30)
      .optional()
      .describe(
        `Length of each node's IPv4 slice (16..30; default ${DEFAULT_IPV4_NODE_PREFIX.Public} when Public, ${DEFAULT_IPV4_NODE_PREFIX.Private} when Private); the first and last address are never used.`,
      ),
    interNodePrefix: InterNodePrefix.optional().describe(interNodePrefixDescription),
  }),
  [
    ...nodePrefixRules(
      4,
      IPV4_NODE_PREFIX_CEL,
      (v: { cidr: string; mode: Ipv4Mode; nodePrefixLength?: number | undefined }) =>
        ipv4NodePrefixLength(v),
    ),
    grantsNeedOnRequestRule,
    privateAssignsAlwaysRule,
    interNodeNeedsPrivateRule,
  ],
).describe(
  'Optional IPv4 addressing: every node gets one slice of nodePrefixLength from cidr; assign says which pods get an address from it.',
);

const PoolBgp = withRules(
  z.object({
    asn: Asn.describe('The ASN every node of this pool speaks as.'),
    peers: z.array(PoolBgpPeer).max(MAX_PEERS).default([]).describe('Routers the nodes peer with.'),
    ...BgpRouteSettings,
  }),
  [uniquePeersRule('bgp.peers')],
).describe('BGP: the nodes announce their prefixes to these peers.');

export const PoolSpec = withRules(
  z.object({
    nodeSelector: LabelSelector.optional().describe(
      'Nodes this pool applies to; absent or empty selects every node.',
    ),
    ipv6: PoolIPv6,
    ipv4: PoolIPv4.optional(),
    nat64: Nat64.optional(),
    pinned: FloatingRanges('pinned')
      .optional()
      .describe(
        'Addresses a pod may request by annotation and keep when it moves to another node.',
      ),
    anycast: FloatingRanges('anycast')
      .optional()
      .describe('The only ranges pods of this pool may announce as anycast.'),
    services: ServiceRanges.optional().describe(
      'Addresses of LoadBalancer Services: the operator assigns them from these ranges to the Services the grants name, and the nodes announce them; and the ClusterIP ranges the nodes announce.',
    ),
    bgp: PoolBgp,
    ipAlgo: IpAlgo.optional().describe(
      "Default interface-ID algorithm for pod IPv6 addresses on this pool's nodes (random, sequential, stable); pods may override it by annotation.",
    ),
  }),
  floatingRangeRules,
).describe('Desired state of a Pool.');
export type PoolSpec = z.infer<typeof PoolSpec>;

const PrefixCounts = z
  .object({
    total: z.int().min(0).describe('Node prefixes the range holds.'),
    allocated: z.int().min(0).describe('Node prefixes assigned to nodes.'),
    quarantined: z.int().min(0).describe('Freed node prefixes not yet reusable.'),
    free: z.int().min(0).describe('Node prefixes available now.'),
  })
  .describe('Node prefix counts of one address family.');

// Counts can exceed 2^53 (an IPv6 /48 of Service addresses): they are capped there.
const ServiceAddressCounts = z
  .object({
    total: z.int().min(0).describe('Addresses the Service ranges hold (capped at 2^53 - 1).'),
    assigned: z.int().min(0).describe('Addresses assigned to Services.'),
    quarantined: z
      .int()
      .min(0)
      .describe('Addresses released by their last Service, not yet reusable.'),
    free: z.int().min(0).describe('Addresses available now (capped at 2^53 - 1).'),
  })
  .describe('Service address counts of one address family.');

/** Most quarantine entries a Pool's status holds (a day of churn on a very large cluster). */
export const MAX_QUARANTINE_ENTRIES = 10_000;

// No CEL here: status is written by the operator alone, and a rule per item of a 10,000-item
// list would blow the CRD's validation cost budget. The operator parses it with this schema.
export const QuarantineEntry = z
  .object({
    prefix: z
      .string()
      .min(1)
      .max(MAX_ADDRESS_LENGTH)
      .describe('The freed node prefix (an IPv6 or IPv4 CIDR).'),
    node: z.string().max(253).optional().describe('The node that held it.'),
    until: z.string().min(1).max(64).describe('When it may be handed out again (RFC 3339).'),
  })
  .describe('A freed node prefix that is not given to another node before `until`.');
export type QuarantineEntry = z.infer<typeof QuarantineEntry>;

export const PoolStatus = z
  .object({
    observedGeneration: z.int().min(0).optional().describe('The generation this status describes.'),
    nodes: z.int().min(0).optional().describe('Nodes selected by this pool.'),
    ipv6: PrefixCounts.optional(),
    ipv4: PrefixCounts.optional(),
    services: z
      .object({ ipv6: ServiceAddressCounts.optional(), ipv4: ServiceAddressCounts.optional() })
      .optional()
      .describe("Addresses of the pool's Service ranges, per family."),
    conditions: z
      .array(Condition)
      .max(16)
      .optional()
      .describe('Ready, Exhausted, Overlap, NodeConflict, PrefixMismatch, ServicesExhausted.'),
    quarantine: z
      .array(QuarantineEntry)
      .max(MAX_QUARANTINE_ENTRIES)
      .optional()
      .describe(
        'Prefixes of deleted NodeConfigs, held back from new nodes until their time has passed (routers, DNS and allow-lists elsewhere still know them). Kept here so that a restarted operator honours them.',
      ),
  })
  .describe('Observed state of a Pool, written by the operator.');
export type PoolStatus = z.infer<typeof PoolStatus>;

export const Pool = z.object({
  apiVersion: z.literal(API_VERSION),
  kind: z.literal(POOL_KIND),
  metadata: ObjectMeta,
  spec: PoolSpec,
  status: PoolStatus.optional(),
});
export type Pool = z.infer<typeof Pool>;

/** Pool condition types. */
export const PoolConditions = {
  Ready: 'Ready',
  Exhausted: 'Exhausted',
  Overlap: 'Overlap',
  NodeConflict: 'NodeConflict',
  PrefixMismatch: 'PrefixMismatch',
  ServicesExhausted: 'ServicesExhausted',
} as const;
