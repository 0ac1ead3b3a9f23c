// The attachment store's file format, checked on every load and every write.
//   { "version": 1, "entries": [ { containerID, ifname, namespace, pod, podUID, ip6, ip4?,
//     pinned, anycast: [], communities?: [], state: "pending" | "committed", createdAt } ],
//     "released": [ { ip, identity, pinned, until } ] }
// `released` (added later, optional in the file) keeps released addresses' quarantine across
// a restart of the agent; `communities` (added later, optional) are the pod's own BGP
// communities, read from its annotation at ADD; `claimKey` (added later, optional) is the owner
// key of the pod's pinned and anycast claims.
import {
  HostPort,
  MAX_HOST_PORTS,
  ClaimKey,
  ContainerId,
  DnsLabel,
  DnsSubdomain,
  IfName,
  MAX_ANYCAST_PER_POD,
  MAX_COMMUNITIES,
  canonicalCommunity,
  isLargeCommunity,
  isStandardCommunity,
} from '@flock/api';
import { z } from 'zod';
import { holderIdentity, isCanonicalAddress, steadyNow } from '@flock/ipam';

export const STORE_FORMAT_VERSION = 1;

const canonicalIp = (family?: 4 | 6) =>
  z.string().refine((s) => isCanonicalAddress(s, family), {
    message: `must be an ${family ? `IPv${family}` : 'IP'} address in canonical form (RFC 5952 for IPv6)`,
  });

export const AllocationEntry = z.object({
  containerID: ContainerId,
  ifname: IfName,
  namespace: DnsLabel,
  pod: DnsSubdomain,
  podUID: z
    .string()
    .min(1)
    .max(128)
    .regex(/^[A-Za-z0-9_.-]+$/, 'podUID must be a UID such as a UUID'),
  ip6: canonicalIp(6),
  ip4: canonicalIp(4).optional(),
  pinned: z.boolean(),
  anycast: z
    .array(canonicalIp())
    .max(MAX_ANYCAST_PER_POD)
    .refine((list) => new Set(list).size === list.length, 'anycast addresses must be unique'),
  communities: z
    .array(
      z
        .string()
        .refine(
          (c) => (isStandardCommunity(c) || isLargeCommunity(c)) && canonicalCommunity(c) === c,
          'communities must be BGP communities A:B or A:B:C in canonical form',
        ),
    )
    .max(2 * MAX_COMMUNITIES)
    .refine((list) => new Set(list).size === list.length, 'communities must be unique')
    .optional(),
  /** The owner key of its pinned and anycast claims (claims/keys.ts); absent before claims. */
  claimKey: ClaimKey.optional(),
  /** Its hostPorts (runtimeConfig.portMappings at ADD); absent: none. */
  hostPorts: z.array(HostPort).max(MAX_HOST_PORTS).optional(),
  state: z.enum(['pending', 'committed']),
  /**
   * Pending because it is being torn down (a DEL, the orphan sweep), not because its ADD has not
   * finished: its pod used it, and its veth stays isolated until the teardown is done.
   */
  removing: z.literal(true).optional(),
  createdAt: z.iso.datetime(),
});
export type AllocationEntry = z.infer<typeof AllocationEntry>;

/** An address released by a pod and quarantined until `until` (not handed out before). */
export const ReleasedAddress = z.object({
  ip: canonicalIp(),
  /** "namespace/name" of the pod that released it (it may take it back, see ip-algo stable). */
  identity: z.string().min(3).max(317),
  pinned: z.boolean(),
  until: z.iso.datetime(),
});
export type ReleasedAddress = z.infer<typeof ReleasedAddress>;

/** What the store keeps of an entry's addresses once released (none when `until` has passed). */
export function releasedAddresses(entry: AllocationEntry, until: number): ReleasedAddress[] {
  if (until <= steadyNow()) return [];
  const identity = holderIdentity(entry.namespace, entry.pod);
  return [entry.ip6, ...(entry.ip4 ? [entry.ip4] : [])].map((ip) => ({
    ip,
    identity,
    pinned: entry.pinned,
    until: new Date(until).toISOString(),
  }));
}

/** Bound of the released list: beyond it, the ones that expire first are forgotten. */
export const MAX_RELEASED = 65_536;

/** What a caller supplies for a new entry: the store sets state and createdAt. */
export type NewAllocationEntry = Omit<AllocationEntry, 'state' | 'createdAt'>;

export const StoreFile = z
  .object({
    version: z.literal(STORE_FORMAT_VERSION),
    entries: z.array(AllocationEntry),
    released: z.array(ReleasedAddress).max(MAX_RELEASED).default([]),
  })
  .superRefine((file, ctx) => {
    const seen = new Set<string>();
    file.entries.forEach((entry, index) => {
      const key = entryKey(entry.containerID, entry.ifname);
      if (seen.has(key)) {
        ctx.addIssue({
          code: 'custom',
          path: ['entries', index],
          message: `duplicate entry for container ${entry.containerID} interface ${entry.ifname}`,
        });
      }
      seen.add(key);
    });
  });
export type StoreFile = z.infer<typeof StoreFile>;

/** Map key of an entry ("/" appears in neither a container ID nor an interface name). */
export function entryKey(containerID: string, ifname: string): string {
  return `${containerID}/${ifname}`;
}
