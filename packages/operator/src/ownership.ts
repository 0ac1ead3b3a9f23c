// Which pool a node belongs to, and which pools are refused because their ranges overlap an
// older pool's. Pure functions of the cached objects; every pool's plan computes the same
// answer, so two pools never both claim a node.
import { matchesSelector, type NodeConfig, type Pool } from '@flock/api';
import { parsePrefix, prefixesOverlap, type Prefix } from '@flock/ipam';
import type { Node } from './nodes.js';

/** Epoch ms of an object's creationTimestamp (0 when absent: oldest). */
export function createdMs(obj: { metadata: { creationTimestamp?: string | Date | undefined } }) {
  const t = obj.metadata.creationTimestamp;
  const ms = t === undefined ? 0 : new Date(t).getTime();
  return Number.isNaN(ms) ? 0 : ms;
}

/** Older first (by creationTimestamp), then by name: the order that decides every tie. */
function byAge(a: Pool, b: Pool): number {
  return createdMs(a) - createdMs(b) || (a.metadata.name < b.metadata.name ? -1 : 1);
}

export const isTerminating = (obj: { metadata: { deletionTimestamp?: unknown } }) =>
  obj.metadata.deletionTimestamp !== undefined && obj.metadata.deletionTimestamp !== null;

interface Ranges {
  /** Node prefix ranges (ipv6.cidr, ipv4.cidr): carved, so nobody else may use them. */
  carved: { cidr: string; prefix: Prefix }[];
  /** Pinned and anycast ranges: may be shared between pools, not with anyone's node ranges. */
  shared: { cidr: string; prefix: Prefix }[];
}

function rangesOf(pool: Pool): Ranges {
  const parse = (cidrs: (string | undefined)[]) =>
    cidrs.flatMap((cidr) => {
      if (cidr === undefined) return [];
      const p = parsePrefix(cidr);
      return p.ok ? [{ cidr, prefix: p.value }] : [];
    });
  const { spec } = pool;
  return {
    carved: parse([spec.ipv6.cidr, spec.ipv4?.cidr]),
    shared: parse([...(spec.pinned?.cidrs ?? []), ...(spec.anycast?.cidrs ?? [])]),
  };
}

/** Why two pools clash, e.g. "2001:db8::/48 overlaps 2001:db8::/56"; undefined if they don't. */
function clash(a: Pool, b: Pool): string | undefined {
  const ra = rangesOf(a);
  const rb = rangesOf(b);
  const pairs = [
    ...ra.carved.flatMap((x) => [...rb.carved, ...rb.shared].map((y) => [x, y] as const)),
    ...ra.shared.flatMap((x) => rb.carved.map((y) => [x, y] as const)),
  ];
  const hit = pairs.find(([x, y]) => prefixesOverlap(x.prefix, y.prefix));
  return hit ? `${hit[0].cidr} overlaps ${hit[1].cidr}` : undefined;
}

export interface OverlapReport {
  /** Older pools this pool clashes with: while there is one, this pool is refused. */
  older: { pool: string; why: string }[];
  /** Newer pools that clash with this one (they are refused, this one keeps working). */
  newer: { pool: string; why: string }[];
}

/** For every pool, the pools its ranges overlap, split by age. */
export function overlapReports(pools: readonly Pool[]): Map<string, OverlapReport> {
  const sorted = [...pools].sort(byAge);
  const out = new Map<string, OverlapReport>(
    sorted.map((p) => [p.metadata.name, { older: [], newer: [] }]),
  );
  for (let i = 0; i < sorted.length; i++) {
    for (let j = i + 1; j < sorted.length; j++) {
      const older = sorted[i] as Pool;
      const newer = sorted[j] as Pool;
      const why = clash(newer, older);
      if (!why) continue;
      out.get(newer.metadata.name)?.older.push({ pool: older.metadata.name, why });
      out.get(older.metadata.name)?.newer.push({ pool: newer.metadata.name, why });
    }
  }
  return out;
}

/** Node ownership over a snapshot of pools and NodeConfigs. */
export class Ownership {
  private readonly sorted: Pool[];
  private readonly byName: Map<string, Pool>;
  private readonly refused: Set<string>;

  constructor(
    pools: readonly Pool[],
    private readonly configs: ReadonlyMap<string, NodeConfig>,
    overlaps: ReadonlyMap<string, OverlapReport>,
  ) {
    this.sorted = [...pools].sort(byAge);
    this.byName = new Map(pools.map((p) => [p.metadata.name, p]));
    this.refused = new Set(
      [...overlaps].filter(([, r]) => r.older.length > 0).map(([name]) => name),
    );
  }

  isRefused(pool: string): boolean {
    return this.refused.has(pool);
  }

  /** Every pool whose nodeSelector selects the node, oldest first. */
  poolsSelecting(node: Node): Pool[] {
    return this.sorted.filter((p) => matchesSelector(p.spec.nodeSelector, node.metadata.labels));
  }

  /**
   * The pool the node belongs to: the pool its live NodeConfig names while that pool still
   * selects it (a node is never moved between pools that both select it); otherwise the
   * oldest pool that selects it and is not refused.
   */
  ownerOf(node: Node, selecting: Pool[] = this.poolsSelecting(node)): string | undefined {
    const nc = this.configs.get(node.metadata.name);
    if (nc && !isTerminating(nc) && selecting.some((p) => p.metadata.name === nc.spec.pool)) {
      return nc.spec.pool;
    }
    return selecting.find((p) => !this.refused.has(p.metadata.name))?.metadata.name;
  }

  pool(name: string): Pool | undefined {
    return this.byName.get(name);
  }
}
