// NAT64: IPv6-only pods reach IPv4 destinations through a translator on their node (Tayga,
// supervised by the agent). A pod dials PREFIX + the IPv4 address (RFC 6052, a /96), as DNS64
// answers; the node translates to IPv4 from a node-local pool and masquerades that pool to its
// own IPv4 address on the way out (docs/install.md, "IPv4 modes").
import { z } from 'zod';
import { MAX_CLUSTER_IP_RANGES, MAX_RANGES } from './floating.js';
import { cidrString, splitCidr } from './net.js';
import { withRules } from './rules.js';

/** The well-known prefix (RFC 6052): for global IPv4 destinations only. */
export const NAT64_WELL_KNOWN_PREFIX = '64:ff9b::/96';
/**
 * The translator's IPv4 pool by default: node-local (masqueraded before it leaves the node), one
 * address per IPv6 source that used NAT64 lately; 4,094 of them.
 */
export const DEFAULT_NAT64_POOL = '192.168.240.0/20';
/** The pool's lengths: at least 14 sources, at most a /16. */
export const NAT64_POOL_MIN_PREFIX = 16;
export const NAT64_POOL_MAX_PREFIX = 28;

/** A translation prefix is a /96: the IPv4 address is its last 32 bits (RFC 6052). */
export const prefixIs96 = (field: string, example: string) => ({
  cel: '!isCIDR(self) || cidr(self).prefixLength() == 96',
  message: `${field} must be a /96 (the IPv4 address is its last 32 bits), e.g. ${example}`,
  check: (s: string) => {
    const len = splitCidr(s)?.prefixLength;
    return len === undefined || len === 96;
  },
});

/**
 * Tayga refuses a prefix in reserved space (its first byte 0 — RFC 8215's 64:ff9b:1::/48 too —,
 * multicast, link-local) other than the well-known one.
 */
const RESERVED_PREFIX = /^(::|[0-9a-f]{1,2}:|ff|fe[89ab])/i;
export const prefixNotReserved = (field: string, allowed: string) => ({
  cel: `self == '${NAT64_WELL_KNOWN_PREFIX}' || !self.matches('^(?i)(::|[0-9a-f]{1,2}:|ff|fe[89ab])')`,
  message: `${field} must be ${allowed} (the translator refuses reserved space, 64:ff9b:1::/48 included)`,
  check: (s: string) => s === NAT64_WELL_KNOWN_PREFIX || !RESERVED_PREFIX.test(s),
});

const poolLength = {
  cel: `!isCIDR(self) || (cidr(self).prefixLength() >= ${NAT64_POOL_MIN_PREFIX} && cidr(self).prefixLength() <= ${NAT64_POOL_MAX_PREFIX})`,
  message: `nat64.pool must be a /${NAT64_POOL_MIN_PREFIX} to a /${NAT64_POOL_MAX_PREFIX}`,
  check: (s: string) => {
    const len = splitCidr(s)?.prefixLength;
    return len === undefined || (len >= NAT64_POOL_MIN_PREFIX && len <= NAT64_POOL_MAX_PREFIX);
  },
};

/** A Pool's and a NodeConfig's nat64 (the operator copies it). */
export const Nat64 = z
  .object({
    prefix: withRules(cidrString('nat64.prefix', 6), [
      prefixIs96('nat64.prefix', '64:ff9b::/96 or 2001:db8:64::/96'),
      prefixNotReserved(
        'nat64.prefix',
        '64:ff9b::/96 or a /96 of global unicast space of your own',
      ),
    ])
      .default(NAT64_WELL_KNOWN_PREFIX)
      .describe(
        `The NAT64 prefix, a /96 (default ${NAT64_WELL_KNOWN_PREFIX}, which stands for global IPv4 only; a /96 of your own global space for private IPv4 destinations). The cluster DNS's dns64 must synthesize the same prefix.`,
      ),
    pool: withRules(cidrString('nat64.pool', 4), [poolLength])
      .default(DEFAULT_NAT64_POOL)
      .describe(
        `The translator's IPv4 addresses on each node (default ${DEFAULT_NAT64_POOL}): never seen outside the node (masqueraded to its IPv4 address), so every node uses the same; it must not overlap an IPv4 destination pods need.`,
      ),
  })
  .describe(
    "NAT64 on every node of the pool: pods reach IPv4 destinations at prefix + address, from the node's IPv4 address.",
  );
export type Nat64 = z.infer<typeof Nat64>;

/** The most IPv4 ranges a node keeps translated traffic from: the pool's, and every range list's. */
export const MAX_NAT64_CLUSTER_CIDRS = 1 + 3 * MAX_RANGES + MAX_CLUSTER_IP_RANGES;

/** A NodeConfig's nat64: the Pool's, and the cluster's IPv4 ranges (the operator fills them in). */
export const NodeNat64 = Nat64.extend({
  clusterCIDRs: z
    .array(cidrString('nat64.clusterCIDRs[]', 4))
    .max(MAX_NAT64_CLUSTER_CIDRS)
    .optional()
    .describe(
      "The cluster's own IPv4 ranges (the Pool's ipv4.cidr, the IPv4 ranges of pinned, anycast and services, the Service CIDRs): nothing translated reaches them, so a pod cannot pass a NetworkPolicy as its node's address by way of NAT64.",
    ),
}).describe(Nat64.description!);
export type NodeNat64 = z.infer<typeof NodeNat64>;
