// Who may claim which floating address: a grant of the NodeConfig (copied from the Pool)
// covers an address when the address lies in the grant's sub-ranges (or, without any, in the
// list's ranges) and the namespace's labels match its selector (or it says anyNamespace). No
// grant, no claim: secure by default. The communities a pod may add to its own announcements
// come from the grants that cover its namespace.
import {
  matchesSelector,
  type ClaimKind,
  type Communities,
  type FloatingGrant,
  type NodeConfigSpec,
} from '@flock/api';
import { cidrsContainIp } from '@flock/ipam';

/** The name label every namespace carries (the API server sets it). */
const NAME_LABEL = 'kubernetes.io/metadata.name';

export interface NamespaceRef {
  name: string;
  labels: Record<string, string>;
}

function rangesOf(spec: NodeConfigSpec, kind: ClaimKind) {
  return kind === 'Pinned'
    ? { cidrs: spec.pinnedCIDRs ?? [], grants: spec.pinnedGrants ?? [] }
    : { cidrs: spec.anycastCIDRs ?? [], grants: spec.anycastGrants ?? [] };
}

/** Does a grant (of floating ranges or of IPv4) name this namespace? */
export function covers(
  grant: Pick<FloatingGrant, 'namespaceSelector' | 'anyNamespace'>,
  namespace: NamespaceRef,
): boolean {
  if (grant.anyNamespace === true) return true;
  const labels = { ...namespace.labels, [NAME_LABEL]: namespace.name };
  return grant.namespaceSelector !== undefined && matchesSelector(grant.namespaceSelector, labels);
}

/** The grant that lets `namespace` claim `address` as `kind` on this node, if any. */
export function grantFor(
  spec: NodeConfigSpec,
  kind: ClaimKind,
  address: string,
  namespace: NamespaceRef,
): FloatingGrant | undefined {
  const { cidrs, grants } = rangesOf(spec, kind);
  if (!cidrsContainIp(cidrs, address)) return undefined;
  return grants.find((g) => covers(g, namespace) && cidrsContainIp(g.cidrs ?? cidrs, address));
}

/**
 * Communities pods of `namespace` may add: those of every grant that covers the namespace; an
 * anyNamespace grant without its own list allows the Pool-wide (legacy) allowedPodCommunities.
 * Without a namespace: those of every grant (what announcements still carry after a change).
 */
export function allowedCommunities(spec: NodeConfigSpec, namespace?: NamespaceRef): Communities {
  const standard = new Set<string>();
  const large = new Set<string>();
  for (const g of [...(spec.pinnedGrants ?? []), ...(spec.anycastGrants ?? [])]) {
    if (namespace && !covers(g, namespace)) continue;
    const list = g.communities ?? (g.anyNamespace ? spec.bgp.allowedPodCommunities : undefined);
    for (const c of list?.standard ?? []) standard.add(c);
    for (const c of list?.large ?? []) large.add(c);
  }
  return { standard: [...standard], large: [...large] };
}

/** May pods of `namespace` ask for IPv4 on this node (ipv4.assign: OnRequest, ipv4.grants)? */
export function mayAskIpv4(spec: NodeConfigSpec, namespace: NamespaceRef): boolean {
  return (spec.ipv4?.grants ?? []).some((g) => covers(g, namespace));
}
