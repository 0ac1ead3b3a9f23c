// Who gets IPv4 on a node: every pod (Always, flock's behaviour before on-request IPv4) or only
// the pods that ask by annotation from namespaces the Pool grants it (OnRequest). Public IPv4 is
// scarce: a node's slice of 14 addresses serves 14 pods under Always and any number of
// IPv6-only pods with a few IPv4 ones under OnRequest.
import { z } from 'zod';
import type { Parsed } from './annotations.js';
import { namespaceGrantRule, MAX_GRANTS } from './floating.js';
import { LabelSelector } from './meta.js';
import { withRules } from './rules.js';

export const Ipv4Assign = z.enum(['Always', 'OnRequest']);
export type Ipv4Assign = z.infer<typeof Ipv4Assign>;
export const DEFAULT_IPV4_ASSIGN: Ipv4Assign = 'Always';

/** The namespaces whose pods may ask for IPv4 under OnRequest. */
export const NamespaceGrant = withRules(
  z.object({
    namespaceSelector: LabelSelector.optional().describe(
      'The namespaces whose pods may ask, by their labels (kubernetes.io/metadata.name: NAME selects one namespace by name).',
    ),
    anyNamespace: z
      .boolean()
      .optional()
      .describe('Every namespace of the cluster may ask: any tenant can then use up the slice.'),
  }),
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

/** Grants mean something only when pods ask: with Always they would be a silent no-op. */
export const grantsNeedOnRequestRule = {
  cel: "self.assign == 'OnRequest' || !has(self.grants)",
  message: 'ipv4.grants applies to assign: OnRequest only (with Always every pod gets IPv4)',
  field: 'grants',
  check: (v: { assign: Ipv4Assign; grants?: unknown }) =>
    v.assign === 'OnRequest' || v.grants === undefined,
};

/** A NodeConfig's IPv4 assignment (copied from its Pool's ipv4). */
export const NodeIpv4 = withRules(z.object(ipv4AssignShape), [grantsNeedOnRequestRule]).describe(
  "Which pods get an IPv4 address from cidr4 (copied from the Pool's ipv4); absent: every pod.",
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

/** How a pod reaches IPv4: its own public address, or none (IPv6 only). */
export const PodIpv4Mode = z.enum(['public', 'none']);
export type PodIpv4Mode = z.infer<typeof PodIpv4Mode>;

/** A committed pod's IPv4 mode, from what it holds. */
export const podIpv4Mode = (entry: { ip4?: string | undefined }): PodIpv4Mode =>
  entry.ip4 === undefined ? 'none' : 'public';
