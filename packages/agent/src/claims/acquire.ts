// ADD's part of address ownership: the pod's namespace must be granted every floating address
// it asks for (the NodeConfig's grants, copied from its Pool), and then it must win each claim.
// A refusal names the address and why; about another namespace it says no more than that.
import { CniErrorCode, type ClaimKind, type NodeConfigSpec } from '@flock/api';
import { cidrsContainIp } from '@flock/ipam';
import { CniCommandError } from '../core/cni-error.js';
import type { ClaimBook } from './book.js';
import { grantFor, type NamespaceRef } from './grants.js';

export interface FloatingRequest {
  namespace: string;
  pod: string;
  uid: string;
  key: string;
  /** The pod's pinned addresses (either family). */
  pinned: readonly string[];
  anycast: readonly string[];
}

/** Every floating address of the request must be granted to its namespace on this node. */
export function checkGrants(spec: NodeConfigSpec, namespace: NamespaceRef, r: FloatingRequest) {
  const asked: [ClaimKind, string][] = [
    ...r.pinned.map((ip): [ClaimKind, string] => ['Pinned', ip]),
    ...r.anycast.map((ip): [ClaimKind, string] => ['Anycast', ip]),
  ];
  const nodePrefixes = [spec.cidr6, ...(spec.cidr4 ? [spec.cidr4] : [])];
  for (const [kind, ip] of asked) {
    // A floating /128 inside a node prefix would beat that prefix's route for one of its pods.
    if (cidrsContainIp(nodePrefixes, ip))
      throw new CniCommandError(
        CniErrorCode.NotAllowed,
        `pod ${r.namespace}/${r.pod}: ${kind === 'Pinned' ? 'pinned' : 'anycast'} address ${ip} lies in this node's prefix ${nodePrefixes.join(', ')}: floating addresses never do`,
      );
    if (grantFor(spec, kind, ip, namespace)) continue;
    const list = kind === 'Pinned' ? 'pinned' : 'anycast';
    const ranges = (kind === 'Pinned' ? spec.pinnedCIDRs : spec.anycastCIDRs) ?? [];
    throw new CniCommandError(
      CniErrorCode.NotAllowed,
      cidrsContainIp(ranges, ip)
        ? `pod ${r.namespace}/${r.pod}: namespace ${r.namespace} may not claim ${list} address ${ip}: no grant of this node's Pool covers it (${list}.grants)`
        : `pod ${r.namespace}/${r.pod}: ${list} address ${ip} is outside this node's ${list} ranges (${ranges.join(', ') || 'none'})`,
    );
  }
}

/** Claim every floating address of the request (pinned first); throws a CniCommandError. */
export async function claimFloating(
  book: Pick<ClaimBook, 'claimPinned' | 'joinAnycast'>,
  r: FloatingRequest,
): Promise<void> {
  for (const ip of r.pinned)
    await book.claimPinned(ip, { namespace: r.namespace, key: r.key, pod: r.pod, uid: r.uid });
  for (const ip of r.anycast) await book.joinAnycast(ip, { namespace: r.namespace, key: r.key });
}
