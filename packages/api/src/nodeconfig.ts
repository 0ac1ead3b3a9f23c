// NodeConfig: one node's share of a Pool. Cluster-scoped, named after its Node, written by the
// operator (spec) and by the node's agent (status).
import { z } from 'zod';
import { Asn, BgpRouteSettings, MAX_PEERS, NodeBgpPeer, uniquePeersRule } from './bgp.js';
import { Condition, ObjectMeta } from './meta.js';
import { cidrString, ipString } from './net.js';
import { FloatingGrant, MAX_CLUSTER_IP_RANGES, MAX_GRANTS, MAX_RANGES } from './floating.js';
import { withRules } from './rules.js';
import { NodeIpv4 } from './ipv4.js';
import { NodeNat64 } from './nat64.js';
import { API_VERSION, NODECONFIG_KIND } from './names.js';

const NodeBgp = withRules(
  z.object({
    asn: Asn.describe('The ASN this node speaks as.'),
    routerID: ipString('bgp.routerID', 4)
      .optional()
      .describe(
        "BGP router ID; default: the node's IPv4 address, else a stable value derived from the node name.",
      ),
    peers: z.array(NodeBgpPeer).max(MAX_PEERS).default([]).describe('The BGP peers of this node.'),
    ...BgpRouteSettings,
  }),
  [uniquePeersRule('bgp.peers')],
).describe("This node's BGP settings.");

/** CEL transition rules of the spec: a node's prefixes never move. */
const NODECONFIG_SPEC_TRANSITIONS = [
  {
    cel: 'self.cidr6 == oldSelf.cidr6',
    message:
      'cidr6 is immutable: a node prefix never moves (delete the NodeConfig to carve a new one)',
    field: 'cidr6',
  },
  {
    cel: '!has(oldSelf.cidr4) || (has(self.cidr4) && self.cidr4 == oldSelf.cidr4)',
    message:
      'cidr4 cannot be changed or removed once set (delete the NodeConfig to carve a new one)',
    field: 'cidr4',
  },
];

export const NodeConfigSpec = withRules(
  z.object({
    pool: z.string().min(1).max(253).describe('Name of the Pool this node belongs to.'),
    cidr6: cidrString('cidr6', 6).describe(
      "The node's IPv6 prefix; pods get /128s from it. Never changes once set.",
    ),
    cidr4: cidrString('cidr4', 4)
      .optional()
      .describe("The node's IPv4 slice; pods get /32s from it. Never changes once set."),
    ipv4: NodeIpv4.optional(),
    nat64: NodeNat64.optional(),
    pinnedCIDRs: z
      .array(cidrString('pinnedCIDRs[]'))
      .max(MAX_RANGES)
      .optional()
      .describe("Ranges pods may pin addresses from (copied from the Pool's pinned.cidrs)."),
    anycastCIDRs: z
      .array(cidrString('anycastCIDRs[]'))
      .max(MAX_RANGES)
      .optional()
      .describe("Ranges pods may announce as anycast (copied from the Pool's anycast.cidrs)."),
    pinnedGrants: z
      .array(FloatingGrant)
      .max(MAX_GRANTS)
      .optional()
      .describe("Who may claim pinned addresses (copied from the Pool's pinned.grants)."),
    anycastGrants: z
      .array(FloatingGrant)
      .max(MAX_GRANTS)
      .optional()
      .describe("Who may claim anycast addresses (copied from the Pool's anycast.grants)."),
    serviceCIDRs: z
      .array(cidrString('serviceCIDRs[]'))
      .max(MAX_RANGES)
      .optional()
      .describe(
        "Ranges of LoadBalancer Service addresses (copied from the Pool's services.cidrs); the operator assigns them, the AddressClaims of kind Service say to which Services.",
      ),
    clusterIPCIDRs: z
      .array(cidrString('clusterIPCIDRs[]'))
      .max(MAX_CLUSTER_IP_RANGES)
      .optional()
      .describe(
        "The cluster's Service CIDRs this node announces as they are (copied from the Pool's services.clusterIPs).",
      ),
    bgp: NodeBgp,
  }),
  [],
  NODECONFIG_SPEC_TRANSITIONS,
).describe('Desired network configuration of one node, written by the operator.');
export type NodeConfigSpec = z.infer<typeof NodeConfigSpec>;

export const BgpPeerStatus = z
  .object({
    address: z.string().describe('Peer address.'),
    asn: z.int().optional().describe('Peer ASN.'),
    protocol: z
      .string()
      .optional()
      .describe('BIRD protocol name (for `birdc show protocols all NAME`).'),
    state: z
      .string()
      .describe('BGP state as BIRD reports it (Established, Active, Connect, Idle, ...).'),
    since: z.string().optional().describe('When the state last changed, as BIRD reports it.'),
    info: z.string().optional().describe("BIRD's last error or extra information."),
    routesExported: z.int().min(0).optional().describe('Routes exported to this peer.'),
  })
  .describe('State of one BGP session.');

export const NodeConfigStatus = z
  .object({
    observedGeneration: z
      .int()
      .min(0)
      .optional()
      .describe('The spec generation the agent has applied.'),
    conditions: z
      .array(Condition)
      .max(16)
      .optional()
      .describe('Ready, BGPEstablished, PolicyApplied.'),
    allocations: z
      .object({
        pods: z.int().min(0).describe('Pods with committed addresses on this node.'),
        ipv6: z.int().min(0).describe('IPv6 addresses in use.'),
        ipv4: z.int().min(0).describe('IPv4 addresses in use.'),
        ipv4Modes: z
          .object({
            public: z.int().min(0).describe('Pods with a public IPv4 address of their own.'),
            private: z
              .int()
              .min(0)
              .describe(
                "Pods with a private IPv4 address (SNAT to the node's beyond the cluster).",
              ),
            nat64: z
              .int()
              .min(0)
              .optional()
              .describe("IPv6-only pods that reach IPv4 through their node's NAT64."),
            none: z.int().min(0).describe('IPv6-only pods (without NAT64).'),
          })
          .optional()
          .describe('Pods by how they reach IPv4.'),
        pinned: z.int().min(0).describe('Pinned addresses in use.'),
        anycast: z.int().min(0).describe('Anycast addresses announced.'),
      })
      .optional()
      .describe('Address allocation counts.'),
    bgpPeers: z
      .array(BgpPeerStatus)
      .max(MAX_PEERS)
      .optional()
      .describe('Per-peer BGP session state.'),
    advertisedRoutes: z.int().min(0).optional().describe('Prefixes this node announces.'),
    agentVersion: z.string().optional().describe('Version of the agent that wrote this status.'),
  })
  .describe('Observed state of one node, written by its agent.');
export type NodeConfigStatus = z.infer<typeof NodeConfigStatus>;

export const NodeConfig = z.object({
  apiVersion: z.literal(API_VERSION),
  kind: z.literal(NODECONFIG_KIND),
  metadata: ObjectMeta,
  spec: NodeConfigSpec,
  status: NodeConfigStatus.optional(),
});
export type NodeConfig = z.infer<typeof NodeConfig>;

/** NodeConfig condition types. */
export const NodeConfigConditions = {
  Ready: 'Ready',
  BGPEstablished: 'BGPEstablished',
  PolicyApplied: 'PolicyApplied',
} as const;
