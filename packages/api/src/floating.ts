// Floating ranges: the pinned, anycast and Service ranges of a Pool, and who may claim from
// them. A range alone is claimable by nobody; a grant names the namespaces that may claim from
// it (by label selector; for Service ranges also which Services of them), the sub-ranges, and
// the BGP communities their pods may add to their own announcements. `anyNamespace: true` is
// the insecure pre-grant behaviour, explicit.
import { z } from 'zod';
import { Communities } from './communities.js';
import { LabelSelector } from './meta.js';
import { cidrContains, cidrString, cidrsOverlap, isCidr, splitCidr } from './net.js';
import { withRules, type Rule } from './rules.js';

/** The floating lists of a Pool, in the order the rules and the operator visit them. */
export const FLOATING_LISTS = ['pinned', 'anycast', 'services'] as const;
export type FloatingList = (typeof FLOATING_LISTS)[number];

/**
 * Ranges per floating range list, grants per list and sub-ranges per grant (bounded for CEL's
 * cost budget: the overlap rules compare every pair of ranges).
 */
export const MAX_RANGES = 64;
export const MAX_GRANTS = 16;
export const MAX_GRANT_CIDRS = 16;
/** Service CIDRs (services.clusterIPs) per pool: a cluster has one or two, per family. */
export const MAX_CLUSTER_IP_RANGES = 8;

/**
 * The widest floating range, per family: pinned and anycast ranges hand out single addresses
 * announced one by one; a range wider than this is a typo (or ::/0), not a plan.
 */
export const WIDEST_FLOATING_PREFIX = { 6: 48, 4: 16 } as const;

/** CEL: do the CIDR strings `a` and `b` share an address (both must be CIDRs)? */
export const celOverlap = (a: string, b: string) =>
  `(cidr(${a}).containsCIDR(cidr(${b})) || cidr(${b}).containsCIDR(cidr(${a})))`;

/** A grant names its namespaces one way: by selector, or all of them, explicitly. */
export const namespaceGrantRule: Rule<{ namespaceSelector?: unknown; anyNamespace?: boolean }> = {
  cel: 'has(self.namespaceSelector) != (has(self.anyNamespace) && self.anyNamespace)',
  message: 'a grant names its namespaces: either namespaceSelector or anyNamespace: true',
  check: (g) => (g.namespaceSelector !== undefined) !== (g.anyNamespace === true),
};

/** The namespaces a grant names: by their labels, or all of them (what may claim or ask). */
export const namespaceGrantShape = (may: string, anyWarning: string) => ({
  namespaceSelector: LabelSelector.optional().describe(
    `The namespaces that may ${may}, by their labels (kubernetes.io/metadata.name: NAME selects one namespace by name).`,
  ),
  anyNamespace: z
    .boolean()
    .optional()
    .describe(`Every namespace of the cluster may ${may}: ${anyWarning}`),
});

export const FloatingGrant = withRules(
  z.object({
    ...namespaceGrantShape(
      'claim',
      'INSECURE (flock before grants). Any tenant can then take any free address of these ranges; see docs/operations.md.',
    ),
    cidrs: z
      .array(cidrString('grants[].cidrs[]'))
      .min(1)
      .max(MAX_GRANT_CIDRS)
      .optional()
      .describe("Sub-ranges of the list's cidrs this grant covers; absent: all of them."),
    communities: Communities.optional().describe(
      'BGP communities pods of these namespaces may add to their own announcements (annotation flock.fritzlab.net/bgp-communities).',
    ),
    serviceSelector: LabelSelector.optional().describe(
      'services.grants only: which LoadBalancer Services of these namespaces may get addresses, by their labels; absent: all of them.',
    ),
  }),
  [namespaceGrantRule],
).describe('Which namespaces may claim addresses from these ranges.');
export type FloatingGrant = z.infer<typeof FloatingGrant>;

/** One floating range: a CIDR no wider than WIDEST_FLOATING_PREFIX. */
const floatingCidr = (what: string) => {
  const { 6: v6, 4: v4 } = WIDEST_FLOATING_PREFIX;
  return withRules(cidrString(`${what}.cidrs[]`), [
    {
      cel: `!isCIDR(self) || cidr(self).prefixLength() >= (cidr(self).ip().family() == 6 ? ${v6} : ${v4})`,
      message: `${what}.cidrs[]: a range must be /${v6} or longer (IPv6), /${v4} or longer (IPv4)`,
      messageExpression: `'${what} range ' + self + ' is too wide: an ' + (cidr(self).ip().family() == 6 ? 'IPv6 range must be /${v6}' : 'IPv4 range must be /${v4}') + ' or longer'`,
      check: (s) => {
        const p = isCidr(s) ? splitCidr(s) : undefined;
        if (!p) return true;
        const widest = WIDEST_FLOATING_PREFIX[p.family];
        return (
          p.prefixLength >= widest ||
          `${what} range ${s} is too wide: an IPv${p.family} range must be /${widest} or longer`
        );
      },
    },
  ]);
};

/**
 * The first range of a list that overlaps another entry (a second listing of itself included)
 * and the first such entry, as a message; true if none does. The same choice as the CEL
 * messageExpression below, which has no indices (Kubernetes 1.30 has no two-variable
 * comprehensions): of the entries overlapping `a` in list order, the first that is not `a`.
 */
function overlapWithin(what: string, cidrs: readonly string[]): true | string {
  for (const a of cidrs) {
    if (!isCidr(a)) continue;
    const o = cidrs.filter((y) => isCidr(y) && cidrsOverlap(a, y));
    if (o.length > 1)
      return `${what} range ${a} overlaps ${what} range ${o[0] === a ? o[1] : o[0]}`;
  }
  return true;
}

/** The first grant range that lies outside every range of the list, as a message; else true. */
function grantOutside(
  what: string,
  v: { cidrs: readonly string[]; grants?: readonly { cidrs?: readonly string[] | undefined }[] },
): true | string {
  for (const g of v.grants ?? []) {
    for (const c of g.cidrs ?? []) {
      if (isCidr(c) && !v.cidrs.some((r) => isCidr(r) && cidrContains(r, c)))
        return `${what} grant range ${c} is not inside any ${what} range`;
    }
  }
  return true;
}

/** What the rules of a floating list read of it. */
interface FloatingValue {
  cidrs: readonly string[];
  grants?: readonly { cidrs?: readonly string[] | undefined; serviceSelector?: unknown }[];
}

/** The fields every floating list has: its ranges and its grants. */
function floatingShape(what: FloatingList) {
  const services = what === 'services';
  return {
    cidrs: z
      .array(floatingCidr(what))
      // A Service list may have no ranges: a pool that only announces its clusterIPs.
      .min(services ? 0 : 1)
      .max(MAX_RANGES)
      .describe(
        services
          ? 'The ranges LoadBalancer Services get addresses from (IPv6 or IPv4 CIDRs).'
          : `The ${what} ranges (IPv6 or IPv4 CIDRs).`,
      ),
    grants: z
      .array(FloatingGrant)
      .max(MAX_GRANTS)
      .optional()
      .describe(
        services
          ? 'Which namespaces (and Services of them) may get addresses from these ranges; absent or empty: none may.'
          : `Which namespaces may claim ${what} addresses from these ranges; absent or empty: none may.`,
      ),
  };
}

/**
 * The rules of one floating list. Ranges of one list never overlap (a second listing of an
 * address would be a second set of grants for it); a grant's sub-ranges lie inside the list;
 * only Service grants select Services. Overlaps with the other lists, the node ranges and the
 * peers are rules of the PoolSpec (pool-rules.ts), which sees them all.
 */
function floatingRules(what: FloatingList): Rule<FloatingValue>[] {
  const hits = (a: string) => `self.cidrs.filter(y, isCIDR(y) && ${celOverlap(a, 'y')})`;
  const outside = `isCIDR(c) && !self.cidrs.exists(r, isCIDR(r) && cidr(r).containsCIDR(cidr(c)))`;
  return [
    {
      // Each range overlaps itself once; anything more is another entry (or itself again).
      cel: `self.cidrs.all(a, !isCIDR(a) || self.cidrs.exists_one(b, isCIDR(b) && ${celOverlap('a', 'b')}))`,
      message: `${what} ranges must not overlap one another`,
      messageExpression: `self.cidrs.map(a, isCIDR(a) && size(${hits('a')}) > 1, '${what} range ' + a + ' overlaps ${what} range ' + (${hits('a')}[0] == a ? ${hits('a')}[1] : ${hits('a')}[0]))[0]`,
      field: 'cidrs',
      check: (v) => overlapWithin(what, v.cidrs),
    },
    {
      cel: `!has(self.grants) || self.grants.all(g, !has(g.cidrs) || !g.cidrs.exists(c, ${outside}))`,
      message: `${what}.grants[].cidrs must lie inside the ${what} ranges`,
      // map(x, filter, transform), not filter().map(): a filtered list of grants (objects)
      // costs the estimator far more than their ranges do.
      messageExpression: `self.grants.map(g, has(g.cidrs) && g.cidrs.exists(c, ${outside}), '${what} grant range ' + g.cidrs.filter(c, ${outside})[0] + ' is not inside any ${what} range')[0]`,
      field: 'grants',
      check: (v) => grantOutside(what, v),
    },
    ...(what === 'services'
      ? []
      : [
          {
            cel: '!has(self.grants) || self.grants.all(g, !has(g.serviceSelector))',
            message: `${what}.grants[].serviceSelector: only services.grants select Services`,
            field: 'grants',
            check: (v: FloatingValue) =>
              (v.grants ?? []).every((g) => g.serviceSelector === undefined),
          },
        ]),
  ];
}

/** A Pool's pinned or anycast ranges and their grants. */
export const FloatingRanges = (what: 'pinned' | 'anycast') =>
  withRules(z.object(floatingShape(what)), floatingRules(what));

/**
 * A Pool's Service ranges (the addresses the operator gives LoadBalancer Services), their
 * grants, and the cluster's Service CIDRs its nodes announce.
 */
export const ServiceRanges = withRules(
  z.object({
    ...floatingShape('services'),
    clusterIPs: z
      .array(cidrString('services.clusterIPs[]'))
      .max(MAX_CLUSTER_IP_RANGES)
      .optional()
      .describe(
        "The cluster's Service CIDRs (e.g. fd00:10:96::/112): every node of the pool announces them as they are, so that machines outside the cluster reach ClusterIPs through kube-proxy on any node.",
      ),
  }),
  floatingRules('services'),
);
