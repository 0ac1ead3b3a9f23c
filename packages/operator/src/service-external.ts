// spec.externalIPs: kube-proxy delivers a Service's external IPs on every node, whoever wrote
// them — any namespace that may create a Service can name any address (CVE-2020-8554). flock
// announces an external IP only when it lies in a Pool's Service range granted to the Service
// and is claimed for it like an assigned address (the claim is the lock: one owner). One in a
// flock Service range the Service may not use is refused with a Warning; one outside every
// flock Service range is not flock's business and is left alone (nothing is announced for it).
import { serviceSharingKey, type Pool, type Service } from '@flock/api';
import { canonicalAddress, parseAddress } from '@flock/ipam';
import { inRanges } from './service-addresses.js';
import { grantSubject, type Offer } from './service-scope.js';
import type { Refusal } from './service-take.js';

export interface ExternalTargets {
  /** External IPs (canonical) the Service may claim. */
  take: string[];
  refused: Refusal[];
}

export const NO_EXTERNAL: ExternalTargets = { take: [], refused: [] };

/** What flock does with the Service's external IPs, given what the grants offer it. */
export function externalTargets(
  svc: Service,
  pools: readonly Pool[],
  offered: readonly Offer[],
): ExternalTargets {
  const ours = [
    ...new Set(
      (svc.spec?.externalIPs ?? []).flatMap((ip) => {
        const c = canonicalAddress(ip);
        return c && pools.some((p) => inRanges(c, p.spec.services?.cidrs ?? [])) ? [c] : [];
      }),
    ),
  ];
  if (!ours.length) return NO_EXTERNAL;
  const sharing = serviceSharingKey(svc);
  if (!sharing.ok)
    return { take: [], refused: [{ reason: 'AddressRefused', note: sharing.error }] };
  const take: string[] = [];
  const refused: Refusal[] = [];
  for (const ip of ours) {
    const family = parseAddress(ip)?.family;
    if (offered.some((o) => o.family === family && inRanges(ip, o.cidrs))) take.push(ip);
    else
      refused.push({
        reason: 'AddressRefused',
        note: `externalIP ${ip} is in a Service range not granted to ${grantSubject(svc)}`,
      });
  }
  return { take, refused };
}
