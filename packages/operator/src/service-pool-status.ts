// What a Pool's status says about its Service addresses: per family, how many its ranges hold,
// how many are assigned, quarantined and free (from the AddressClaims inside them), and which
// Services wait because none is free (from the Service address controller).
import { splitCidr, type AddressClaim, type Pool, type PoolStatus } from '@flock/api';
import { capped, inRanges, usableCount } from './service-addresses.js';
import { isReleased } from './service-claims.js';

export interface ServiceAddressFacts {
  counts: NonNullable<PoolStatus['services']>;
  /** Services (namespace/name) waiting for an address of this pool. */
  waiting: readonly string[];
}

/** The facts of a pool with a services list; undefined without one. */
export function serviceAddressFacts(
  pool: Pool,
  claims: readonly AddressClaim[],
  waiting: readonly string[],
): ServiceAddressFacts | undefined {
  const list = pool.spec.services;
  if (!list) return undefined;
  const counts: ServiceAddressFacts['counts'] = {};
  for (const family of [6, 4] as const) {
    const cidrs = list.cidrs.filter((c) => splitCidr(c)?.family === family);
    if (!cidrs.length) continue;
    const inside = claims.filter(
      (c) => c.spec.kind === 'Service' && inRanges(c.spec.address, cidrs),
    );
    const quarantined = inside.filter(isReleased).length;
    const assigned = inside.length - quarantined;
    const total = usableCount(cidrs);
    const free = total - BigInt(assigned + quarantined);
    counts[family === 6 ? 'ipv6' : 'ipv4'] = {
      total: capped(total),
      assigned,
      quarantined,
      free: capped(free > 0n ? free : 0n),
    };
  }
  return { counts, waiting: [...waiting].sort() };
}
