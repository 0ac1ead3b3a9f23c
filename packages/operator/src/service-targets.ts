// What a Service should have, per family, before any claim is looked at: the addresses it asks
// for (each of a family it has, inside a range granted to it), or any address of the ranges
// its grants give it; or why it gets nothing.
import { familyName, type Family, type Service } from '@flock/api';
import { canonicalAddress } from '@flock/ipam';
import { inRanges } from './service-addresses.js';
import { grantSubject, type Families, type Offer } from './service-scope.js';
import type { Refusal } from './service-take.js';

export interface Target {
  family: Family;
  /** Requested: exactly this (canonical) address. */
  address?: string;
  /** The ranges granted to the Service in this family, pool by pool. */
  offered: Offer[];
}

export function serviceTargets(
  svc: Service,
  requested: readonly { ip: string; family: Family }[] | undefined,
  { families, required }: Families,
  offered: readonly Offer[],
): Target[] | Refusal {
  const of = (f: Family) => offered.filter((o) => o.family === f);
  const refused = (note: string): Refusal => ({ reason: 'AddressRefused', note });
  if (requested) {
    for (const r of requested) {
      if (!families.includes(r.family))
        return refused(
          `${r.ip} is an ${familyName(r.family)} address; the Service's families are ${families.map(familyName).join(', ')}`,
        );
      if (!of(r.family).some((o) => inRanges(r.ip, o.cidrs)))
        return refused(`${r.ip} is not in a Service range granted to ${grantSubject(svc)}`);
    }
    const missing = families.find((f) => !requested.some((r) => r.family === f));
    if (required && missing)
      return refused(`RequireDualStack: ask for an ${familyName(missing)} address too`);
    return requested.map((r) => ({
      family: r.family,
      address: canonicalAddress(r.ip) as string,
      offered: of(r.family),
    }));
  }
  const granted = families.filter((f) => of(f).length > 0);
  const missing = families.find((f) => !granted.includes(f));
  if (granted.length === 0 || (required && missing))
    return refused(
      `no Pool's services.grants give ${grantSubject(svc)} an ${(required && missing ? [missing] : families).map(familyName).join(' or ')} range`,
    );
  return granted.map((f) => ({ family: f, offered: of(f) }));
}
