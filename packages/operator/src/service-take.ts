// Taking a Service address: the claim is the lock. A free address is taken by creating its
// claim; a 409 means someone has it, and a fresh read says whether this Service may still use
// it — a claim of the same namespace and sharing key that no listed Service's port conflicts
// with is joined (an update at the resourceVersion read); the same owner's quarantine is taken
// back; a quarantine that has ended is deleted and the address created anew. Anything else is
// another owner's: a requested address is then refused, an automatic one skipped for the next.
import { parseAddress } from '@flock/ipam';
import { servicesOf, isReleased, joined, portConflict, quarantineEnd } from './service-claims.js';
import type { ClaimRead, ClaimView, ClaimWriter } from './service-claims.js';
import { inRanges, lowestFree } from './service-addresses.js';
import type { Offer } from './service-scope.js';
import type { Service } from '@flock/api';

/** Why an address cannot be this Service's; `until`: it may be, at that time (epoch ms). */
export interface Refusal {
  reason: 'AddressRefused' | 'AddressSharingConflict' | 'AddressPoolExhausted';
  note: string;
  until?: number;
  /** Exhausted: the pools that had no free address. */
  pools?: string[];
}

export interface Took {
  read: ClaimRead;
  /** Written now (a new claim, a join, a quarantine taken back), not found already held. */
  fresh: boolean;
  /** Automatic: the address of the sharing key this Service could not share, and why. */
  notShared?: string;
}

export type Taken = Took | Refusal;

export const isRefusal = (t: Taken): t is Refusal => 'reason' in t;

export interface TakeContext {
  svc: Service;
  /** The Service's sharing key. */
  key: string;
  view: ClaimView;
  writer: ClaimWriter;
  /** The other Services of the namespace, for port conflicts. */
  service: (name: string) => Service | undefined;
  now: number;
  quarantineMs: number;
  signal: AbortSignal;
}

/** Writes lost to other writers before a take gives up (and the reconcile is retried). */
const MAX_ATTEMPTS = 8;

type Verdict = 'mine' | 'join' | 'expired' | Refusal;

/** What the Service may do with the claim `cur` of an address. */
function verdict(t: TakeContext, cur: ClaimRead): Verdict {
  const { namespace, name } = t.svc.metadata;
  const c = cur.claim.spec;
  const address = c.address;
  if (isReleased(cur.claim)) {
    if (c.namespace === namespace && c.key === t.key) return 'join';
    const until = quarantineEnd(cur.claim, t.quarantineMs);
    if (t.now >= until) return 'expired';
    return {
      reason: 'AddressRefused',
      note: `${address} was released by another owner and is quarantined until ${new Date(until).toISOString()}`,
      until,
    };
  }
  if (c.kind !== 'Service' || c.namespace !== namespace)
    return { reason: 'AddressRefused', note: `${address} is claimed by another owner` };
  const listed = servicesOf(cur.claim);
  if (listed.includes(name)) return 'mine';
  if (c.key !== t.key)
    return {
      reason: 'AddressSharingConflict',
      note: `${address} is used by Service(s) ${listed.join(', ')} with sharing key ${c.key}, not ${t.key}`,
    };
  const clash = portConflict(
    t.svc,
    listed.map((n) => ({ name: n, service: t.service(n) })),
  );
  if (clash)
    return { reason: 'AddressSharingConflict', note: `${address} cannot be shared: ${clash}` };
  return 'join';
}

const aborted = (signal: AbortSignal) => {
  if (signal.aborted) throw new Error('stopped: leadership lost or shutting down');
};

/** Take `address` for the Service, or say why not. */
export async function takeAddress(t: TakeContext, address: string): Promise<Taken> {
  let cur = t.view.of(address);
  for (let attempt = 0; attempt < MAX_ATTEMPTS; attempt++) {
    aborted(t.signal);
    if (!cur) {
      const r = await t.writer.create(
        address,
        t.svc.metadata.namespace,
        t.key,
        t.svc.metadata.name,
      );
      if (typeof r !== 'number') return { read: r, fresh: true };
      cur = await t.writer.read(address);
      continue;
    }
    const v = verdict(t, cur);
    if (v === 'mine') return { read: cur, fresh: false };
    if (typeof v !== 'string') return v;
    const r =
      v === 'join'
        ? await t.writer.update(cur, joined(cur.claim.spec, t.svc.metadata.name))
        : await t.writer.delete(cur);
    if (typeof r === 'object') return { read: r, fresh: true };
    cur = r === true ? undefined : await t.writer.read(address);
  }
  throw new Error(`${address}: ${MAX_ATTEMPTS} writes lost to other writers in a row`);
}

/** Address values of one family that every claim (of any kind) holds. */
function claimedValues(view: ClaimView, family: 4 | 6): Set<bigint> {
  const out = new Set<bigint>();
  for (const { claim } of view.all()) {
    const a = parseAddress(claim.spec.address);
    if (a?.family === family) out.add(a.value);
  }
  return out;
}

/**
 * Take an address of one family from the offered ranges: one the Service's sharing key
 * already uses (sharing it, when the ports allow), else that key's own quarantine, else the
 * lowest free address of the first pool that has one. Exhausted: a refusal naming the pools.
 */
export async function takeAny(t: TakeContext, offered: readonly Offer[]): Promise<Taken> {
  const family = offered[0]?.family ?? 6;
  const inOffer = (ip: string) => offered.some((o) => inRanges(ip, o.cidrs));
  const same = t.view
    .all()
    .filter(
      ({ claim }) =>
        claim.spec.kind === 'Service' &&
        claim.spec.namespace === t.svc.metadata.namespace &&
        claim.spec.key === t.key &&
        parseAddress(claim.spec.address)?.family === family &&
        inOffer(claim.spec.address),
    )
    // Shared addresses first, then the key's quarantine.
    .sort((a, b) => Number(isReleased(a.claim)) - Number(isReleased(b.claim)));
  let conflict: Refusal | undefined;
  for (const { claim } of same) {
    const r = await takeAddress(t, claim.spec.address);
    if (!isRefusal(r)) return r;
    conflict ??= r;
  }
  const notShared = conflict ? { notShared: conflict.note } : {};
  const tried = claimedValues(t.view, family);
  let lost = 0;
  for (const offer of offered) {
    for (;;) {
      const address = lowestFree(offer.cidrs, tried);
      if (address === undefined) break;
      const r = await takeAddress(t, address);
      if (!isRefusal(r)) return { ...r, ...notShared };
      // Claimed meanwhile (the view lagged): the next one. Many in a row: look again later.
      if (++lost >= MAX_ATTEMPTS)
        throw new Error(`${lost} free-looking addresses were claimed by others; retrying`);
      tried.add((parseAddress(address) as { value: bigint }).value);
    }
  }
  const pools = [...new Set(offered.map((o) => o.pool))];
  return {
    reason: 'AddressPoolExhausted',
    note: `no free IPv${family} address in the ranges of pool(s) ${pools.join(', ')}${conflict ? `; ${conflict.note}` : ''}`,
    pools,
  };
}
