// Overlaps between pools: what CEL cannot check, because it sees one Pool at a time. Decided by
// age (creationTimestamp, then name): the newer pool of a clashing pair gives way.
//  - A node range (ipv6.cidr, ipv4.cidr) overlapping any range of the other pool, or a
//    floating range overlapping the other's node range: prefixes are carved from node ranges,
//    so the newer pool is refused as a whole (nothing is created, changed or deleted for it).
//  - A floating range (pinned, anycast, services) overlapping the other's floating range: the newer pool
//    keeps working, but the clashing list is withdrawn from its NodeConfigs (no ranges, no
//    grants) until the overlap is gone: fail closed, since one address would otherwise be
//    claimable under two pools' grants. The same range, in the same kind of list, with the
//    same grants in both pools is no clash but a share (one anycast range announced from two
//    sites' pools).
import { FLOATING_LISTS, type FloatingList, type Pool } from '@flock/api';
import { parsePrefix, prefixesOverlap, type Prefix } from '@flock/ipam';
import { deepEqual } from './equal.js';

export type { FloatingList };

export interface Clash {
  pool: string;
  /** Both ranges, e.g. "2001:db8::/48 overlaps 2001:db8::/56". */
  why: string;
  /** Set: only these floating lists of the newer pool are withdrawn; absent: it is refused. */
  withdraws?: FloatingList[];
}

export interface OverlapReport {
  /** Older pools this pool clashes with (it gives way to them). */
  older: Clash[];
  /** Newer pools that clash with this one (they give way; this one keeps working). */
  newer: Clash[];
}

/** Does this report refuse the pool as a whole? */
export const isRefused = (r: OverlapReport) => r.older.some((c) => c.withdraws === undefined);

/** The floating lists this report withdraws from the pool's NodeConfigs. */
export const withdrawnLists = (r: OverlapReport): Set<FloatingList> =>
  new Set(r.older.flatMap((c) => c.withdraws ?? []));

interface Range {
  cidr: string;
  prefix: Prefix;
}
interface FloatingRange extends Range {
  list: FloatingList;
}

function parse(cidr: string | undefined): Range[] {
  if (cidr === undefined) return [];
  const p = parsePrefix(cidr);
  return p.ok ? [{ cidr, prefix: p.value }] : [];
}

const nodeRanges = (pool: Pool): Range[] => [
  ...parse(pool.spec.ipv6.cidr),
  ...parse(pool.spec.ipv4?.cidr),
];

const floatingRanges = (pool: Pool): FloatingRange[] =>
  FLOATING_LISTS.flatMap((list) =>
    (pool.spec[list]?.cidrs ?? []).flatMap((cidr) => parse(cidr).map((r) => ({ ...r, list }))),
  );

/** The same range listed the same way with the same grants by both pools: a share. */
function shared(a: Pool, x: FloatingRange, b: Pool, y: FloatingRange): boolean {
  return (
    x.list === y.list &&
    x.cidr === y.cidr &&
    deepEqual(a.spec[x.list]?.grants ?? [], b.spec[y.list]?.grants ?? [])
  );
}

/** How the newer pool clashes with the older one, if it does. */
function clash(newer: Pool, older: Pool): Omit<Clash, 'pool'> | undefined {
  const nodeN = nodeRanges(newer);
  const nodeO = nodeRanges(older);
  const floatN = floatingRanges(newer);
  const floatO = floatingRanges(older);
  const carved = [
    ...nodeN.flatMap((x) => [...nodeO, ...floatO].map((y) => [x, y] as const)),
    ...floatN.flatMap((x) => nodeO.map((y) => [x, y] as const)),
  ].find(([x, y]) => prefixesOverlap(x.prefix, y.prefix));
  if (carved) return { why: `${carved[0].cidr} overlaps ${carved[1].cidr}` };
  const hits = floatN.flatMap((x) =>
    floatO
      .filter((y) => prefixesOverlap(x.prefix, y.prefix) && !shared(newer, x, older, y))
      .map((y) => [x, y] as const),
  );
  const [first] = hits;
  if (!first) return undefined;
  const [x, y] = first;
  return {
    why: `${x.list} range ${x.cidr} of pool ${newer.metadata.name} overlaps ${y.list} range ${y.cidr} of pool ${older.metadata.name}`,
    withdraws: [...new Set(hits.map(([h]) => h.list))],
  };
}

/** Older first (by creationTimestamp), then by name: the order that decides every tie. */
export function byAge(a: Pool, b: Pool): number {
  return createdMs(a) - createdMs(b) || (a.metadata.name < b.metadata.name ? -1 : 1);
}

/** Epoch ms of an object's creationTimestamp (0 when absent: oldest). */
export function createdMs(obj: { metadata: { creationTimestamp?: string | Date | undefined } }) {
  const t = obj.metadata.creationTimestamp;
  const ms = t === undefined ? 0 : new Date(t).getTime();
  return Number.isNaN(ms) ? 0 : ms;
}

/** For every pool, the pools its ranges clash with, split by age. */
export function overlapReports(pools: readonly Pool[]): Map<string, OverlapReport> {
  const sorted = [...pools].sort(byAge);
  const out = new Map<string, OverlapReport>(
    sorted.map((p) => [p.metadata.name, { older: [], newer: [] }]),
  );
  for (let i = 0; i < sorted.length; i++) {
    for (let j = i + 1; j < sorted.length; j++) {
      const older = sorted[i] as Pool;
      const newer = sorted[j] as Pool;
      const c = clash(newer, older);
      if (!c) continue;
      out.get(newer.metadata.name)?.older.push({ pool: older.metadata.name, ...c });
      out.get(older.metadata.name)?.newer.push({ pool: newer.metadata.name, ...c });
    }
  }
  return out;
}
