// The one rule that announcing and sourcing share: may this attachment use this floating
// address right now? A pinned address while the claim names the attachment's pod (by UID) as
// its holder; an anycast address while the claim is the anycast group of the pod's namespace
// and key. Before the claims have synced nothing floating is usable: the caller waits for the
// sync (an empty cache would withdraw every floating address at each agent restart).
import { isPodReady, type AddressClaim, type Pod } from '@flock/api';
import { cidrsContainIp } from '@flock/ipam';
import type { AllocationEntry } from '../store/index.js';
import { podClaimKey } from './keys.js';

/** The claim of an address, as the claims cache holds it. */
export type ClaimOf = (address: string) => AddressClaim | undefined;

/** Is `address` claimed for the pod with this UID (Pinned, holder = that pod)? */
export function holdsPinned(claimOf: ClaimOf, address: string, podUID: string): boolean {
  const c = claimOf(address);
  return c?.spec.kind === 'Pinned' && c.spec.holders[0]?.uid === podUID;
}

/** Is `address` the anycast group of this namespace and key? */
export function inAnycastGroup(
  claimOf: ClaimOf,
  address: string,
  namespace: string,
  key: string,
): boolean {
  const c = claimOf(address);
  return c?.spec.kind === 'Anycast' && c.spec.namespace === namespace && c.spec.key === key;
}

/**
 * The claim key of an attachment: the one recorded at ADD, else (entries made before claims
 * existed) its pod's; undefined when neither is known or the pod's annotation is malformed.
 */
export function attachmentKey(entry: AllocationEntry, pod: Pod | undefined): string | undefined {
  if (entry.claimKey) return entry.claimKey;
  if (!pod) return undefined;
  try {
    return podClaimKey(pod);
  } catch {
    return undefined;
  }
}

/** The anycast addresses of an attachment its claims allow (readiness is the caller's). */
export function claimedAnycast(
  claimOf: ClaimOf,
  entry: AllocationEntry,
  pod: Pod | undefined,
): string[] {
  const key = attachmentKey(entry, pod);
  return key === undefined
    ? []
    : entry.anycast.filter((ip) => inAnycastGroup(claimOf, ip, entry.namespace, key));
}

/** The entry's addresses that lie in the pinned ranges (a pinned pod's floating ones). */
export function pinnedAddresses(e: AllocationEntry, pinnedCIDRs: readonly string[]): string[] {
  return [e.ip6, ...(e.ip4 ? [e.ip4] : [])].filter((ip) => cidrsContainIp(pinnedCIDRs, ip));
}

/**
 * The source addresses an attachment may use now: its own addresses but pinned ones it does
 * not hold, and its claimed anycast addresses while its pod is Ready and not being deleted.
 */
export function usableSources(
  claimOf: ClaimOf,
  entry: AllocationEntry,
  pod: Pod | undefined,
  pinnedCIDRs: readonly string[],
): { addresses: string[]; anycast: string[] } {
  const pinned = new Set(pinnedAddresses(entry, pinnedCIDRs));
  const addresses = [entry.ip6, ...(entry.ip4 ? [entry.ip4] : [])].filter(
    (ip) => !pinned.has(ip) || holdsPinned(claimOf, ip, entry.podUID),
  );
  const serving =
    pod !== undefined &&
    pod.metadata.uid === entry.podUID &&
    isPodReady(pod) &&
    pod.metadata.deletionTimestamp === undefined;
  return { addresses, anycast: serving ? claimedAnycast(claimOf, entry, pod) : [] };
}
