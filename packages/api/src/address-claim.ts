// AddressClaim: who owns a floating address (a pinned pod address, an anycast address, a
// LoadBalancer Service's address). Node prefixes belong to nodes; a floating address moves
// between nodes, so it has one owner at a time, recorded here. Cluster-scoped and named after the address (claimName): creating the
// object is the lock — of two agents racing for one address the API server lets exactly one
// create it — and every change of holder is an update at the resourceVersion that was read.
import { z } from 'zod';
import { ObjectMeta, DnsLabel, DnsSubdomain } from './meta.js';
import { ipFamily, ipString, ipToBigInt } from './net.js';
import { withRules } from './rules.js';
import { API_VERSION, ADDRESSCLAIM_KIND } from './names.js';

/** The most holders an anycast claim lists (one per node with a member pod). */
export const MAX_CLAIM_HOLDERS = 512;

/** The most Services one Service claim lists (Services sharing the address, each its ports). */
export const MAX_CLAIM_SERVICES = 128;

/** RFC 3339 as the API server writes times (seconds, optional fraction, Z or an offset). */
const RFC3339 =
  /^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}(\.[0-9]+)?(Z|[+-][0-9]{2}:[0-9]{2})$/;

export const ClaimKind = z
  .enum(['Pinned', 'Anycast', 'Service'])
  .describe(
    'Pinned: one pod holds the address (flock.fritzlab.net/pinned-ip); Anycast: the pods of one namespace sharing the key announce it (flock.fritzlab.net/anycast); Service: the LoadBalancer Services listed in services use it (assigned by the operator).',
  );
export type ClaimKind = z.infer<typeof ClaimKind>;

/** Who within a namespace owns the address: an owner key (workload or group). */
export const ClaimKey = z
  .string()
  .min(1)
  .max(317)
  .regex(
    /^[A-Za-z0-9][-A-Za-z0-9_./]*$/,
    'key must start with a letter or digit and hold only letters, digits, -, _, . and /',
  );

export const ClaimHolder = z
  .object({
    node: DnsSubdomain.describe('The node the holder runs on.'),
    pod: DnsSubdomain.optional().describe('Pinned: the pod that holds the address.'),
    uid: z.string().min(1).max(128).optional().describe("Pinned: that pod's UID."),
    withdrawn: z
      .boolean()
      .optional()
      .describe(
        "Pinned: set by the holder's agent once the pod is terminating and its node no longer announces the address; a replacement with the same key may then take the claim over.",
      ),
  })
  .describe('A holder of the address.');
export type ClaimHolder = z.infer<typeof ClaimHolder>;

/** Read side of the holders' list-map key (the API server words its own refusal). */
export const HOLDERS_UNIQUE = 'holders must name each node once';
/** Read side of the services' list-type set. */
export const SERVICES_UNIQUE = 'services must name each Service once';

export const AddressClaimSpec = withRules(
  z.object({
    address: ipString('address').describe(
      'The claimed address (canonical: RFC 5952 for IPv6, dotted quad for IPv4).',
    ),
    kind: ClaimKind,
    namespace: DnsLabel.describe('The namespace that owns the address.'),
    key: ClaimKey.describe(
      'The owner within the namespace. Pinned: the workload (the pod annotation flock.fritzlab.net/claim-key, else its controller, e.g. Deployment/web); a replacement pod takes the address over only with the same key. Anycast: the group (flock.fritzlab.net/claim-key, else the controller); pods of the namespace with the same key share it. Service: the sharing key (the Service annotation flock.fritzlab.net/sharing-key, else Service/<name>); Services of the namespace with the same key may share the address.',
    ),
    holders: z
      .array(ClaimHolder)
      .max(MAX_CLAIM_HOLDERS)
      .default([])
      // A map keyed by node: the API server refuses a node listed twice itself, in linear time
      // (a CEL rule comparing every pair of 512 holders would exceed the per-call cost limit).
      .meta({ 'x-kubernetes-list-type': 'map', 'x-kubernetes-list-map-keys': ['node'] })
      .describe(
        'Pinned: the one pod that holds the address. Anycast: one entry per node with member pods. Service: none.',
      )
      .refine((hs) => new Set(hs.map((h) => h.node)).size === hs.length, {
        message: HOLDERS_UNIQUE,
      }),
    services: z
      .array(DnsLabel)
      .max(MAX_CLAIM_SERVICES)
      .refine((ss) => new Set(ss).size === ss.length, { message: SERVICES_UNIQUE })
      // A set: the API server refuses a name listed twice itself (linear, no CEL cost).
      .meta({ 'x-kubernetes-list-type': 'set' })
      .optional()
      .describe(
        'Service: the LoadBalancer Services (of spec.namespace) that use the address; several only when they share it (same sharing key, no port in common). Empty once the last one let it go.',
      ),
    releasedAt: z
      .string()
      .max(64)
      .regex(RFC3339, 'releasedAt must be an RFC 3339 time such as 2030-01-01T00:00:00Z')
      .optional()
      .describe(
        "Service: when the address's last Service let it go (RFC 3339). The claim stays as the address's quarantine and is not given to another owner before releasedAt plus the operator's --service-address-quarantine; then the operator deletes it.",
      ),
  }),
  [
    {
      cel: "self.kind != 'Pinned' || (size(self.holders) <= 1 && self.holders.all(h, has(h.pod) && has(h.uid)))",
      message: 'a Pinned claim has at most one holder, and it names its pod and uid',
      field: 'holders',
      check: (s) =>
        s.kind !== 'Pinned' || (s.holders.length <= 1 && s.holders.every((h) => h.pod && h.uid)),
    },
    {
      cel: "self.kind != 'Anycast' || self.holders.all(h, !has(h.pod) && !has(h.uid) && !has(h.withdrawn))",
      message: 'an Anycast claim lists nodes only (no pod, uid or withdrawn)',
      field: 'holders',
      check: (s) =>
        s.kind !== 'Anycast' ||
        s.holders.every((h) => !h.pod && !h.uid && h.withdrawn === undefined),
    },
    {
      cel: "self.kind == 'Service' || (!has(self.services) && !has(self.releasedAt))",
      message: 'only a Service claim has services or releasedAt',
      field: 'services',
      check: (s) => s.kind === 'Service' || (s.services === undefined && !s.releasedAt),
    },
    {
      cel: "self.kind != 'Service' || size(self.holders) == 0",
      message: 'a Service claim has no holders (its Services are listed in services)',
      field: 'holders',
      check: (s) => s.kind !== 'Service' || s.holders.length === 0,
    },
    {
      cel: "self.kind != 'Service' || ((has(self.services) && size(self.services) > 0) != has(self.releasedAt))",
      message:
        'a Service claim lists its Services, or none and releasedAt (its quarantine), never both',
      field: 'services',
      check: (s) =>
        s.kind !== 'Service' || (s.services?.length ?? 0) > 0 !== (s.releasedAt !== undefined),
    },
  ],
  [
    {
      // `namespace` is a CEL reserved word: the API server names the field __namespace__.
      cel: 'self.address == oldSelf.address && self.kind == oldSelf.kind && self.__namespace__ == oldSelf.__namespace__ && self.key == oldSelf.key',
      message: 'address, kind, namespace and key of a claim never change (delete it to release)',
    },
  ],
).describe('Who owns the address.');
export type AddressClaimSpec = z.infer<typeof AddressClaimSpec>;

export const AddressClaimStatus = z
  .object({})
  .describe('Reserved: a claim is all spec (written by the agents and the operator).');

/**
 * The claim's name for an address: IPv4 as is (192.0.2.7), IPv6 as its eight groups, four hex
 * digits each, joined by "-" (2001-0db8-0000-0000-0000-0000-0000-0001): a valid object name,
 * one per address, turned back into the address by replacing "-" with ":".
 */
export function claimName(address: string): string {
  const family = ipFamily(address);
  if (family === 4) return address;
  if (family !== 6) throw new Error(`not an IP address: ${address}`);
  const value = ipToBigInt(address);
  return Array.from({ length: 8 }, (_, i) =>
    ((value >> BigInt(112 - 16 * i)) & 0xffffn).toString(16).padStart(4, '0'),
  ).join('-');
}

/**
 * The claim's name stands for its address (checked by the API server and on every read), and
 * only its canonical spelling does: "2001-db8--1" would parse as the same address, but a
 * second name for one address would be a second lock. 39 characters with no "." is exactly
 * eight 4-digit groups (a shortened or IPv4-embedding spelling is shorter or has a "."; the
 * API server refuses upper case in names). No regex: the cost estimator sizes metadata.name
 * as unbounded, and a regex over it would blow the budget.
 */
const NAME_RULE = {
  cel:
    'isIP(self.spec.address) && (ip(self.spec.address).family() == 4' +
    ' ? self.metadata.name == self.spec.address' +
    " : size(self.metadata.name) == 39 && !self.metadata.name.contains('.')" +
    " && isIP(self.metadata.name.replace('-', ':'))" +
    " && ip(self.metadata.name.replace('-', ':')) == ip(self.spec.address))",
  message:
    'metadata.name must be the claimed address (IPv4 as is; IPv6 as eight 4-digit groups joined by -)',
};

export const AddressClaim = withRules(
  z.object({
    apiVersion: z.literal(API_VERSION),
    kind: z.literal(ADDRESSCLAIM_KIND),
    metadata: ObjectMeta,
    spec: AddressClaimSpec,
    status: AddressClaimStatus.optional(),
  }),
  [
    {
      ...NAME_RULE,
      check: (c) =>
        ipFamily(c.spec.address) !== undefined && c.metadata.name === claimName(c.spec.address),
    },
  ],
);
export type AddressClaim = z.infer<typeof AddressClaim>;
