// AddressClaim: who owns a floating address (a pinned pod address, an anycast address). Node
// prefixes belong to nodes; a floating address moves between nodes, so it has one owner at a
// time, recorded here. Cluster-scoped and named after the address (claimName): creating the
// object is the lock — of two agents racing for one address the API server lets exactly one
// create it — and every change of holder is an update at the resourceVersion that was read.
import { z } from 'zod';
import { ObjectMeta, DnsLabel, DnsSubdomain } from './meta.js';
import { ipFamily, ipString, ipToBigInt } from './net.js';
import { withRules } from './rules.js';
import { API_VERSION, ADDRESSCLAIM_KIND } from './names.js';

/** The most holders an anycast claim lists (one per node with a member pod). */
export const MAX_CLAIM_HOLDERS = 512;

export const ClaimKind = z
  .enum(['Pinned', 'Anycast'])
  .describe(
    'Pinned: one pod holds the address (flock.fritzlab.net/pinned-ip); Anycast: the pods of one namespace sharing the key announce it (flock.fritzlab.net/anycast).',
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

export const AddressClaimSpec = withRules(
  z.object({
    address: ipString('address').describe(
      'The claimed address (canonical: RFC 5952 for IPv6, dotted quad for IPv4).',
    ),
    kind: ClaimKind,
    namespace: DnsLabel.describe('The namespace that owns the address.'),
    key: ClaimKey.describe(
      'The owner within the namespace. Pinned: the workload (the pod annotation flock.fritzlab.net/claim-key, else its controller, e.g. Deployment/web); a replacement pod takes the address over only with the same key. Anycast: the group (flock.fritzlab.net/claim-key, else the controller); pods of the namespace with the same key share it.',
    ),
    holders: z
      .array(ClaimHolder)
      .max(MAX_CLAIM_HOLDERS)
      .default([])
      // A map keyed by node: the API server refuses a node listed twice itself, in linear time
      // (a CEL rule comparing every pair of 512 holders would exceed the per-call cost limit).
      .meta({ 'x-kubernetes-list-type': 'map', 'x-kubernetes-list-map-keys': ['node'] })
      .describe(
        'Pinned: the one pod that holds the address. Anycast: one entry per node with member pods.',
      )
      .refine((hs) => new Set(hs.map((h) => h.node)).size === hs.length, {
        message: HOLDERS_UNIQUE,
      }),
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
