// Which pool a node belongs to. A pure function of the cached objects; every pool's plan
// computes the same answer, so two pools never both claim a node. Pools refused for
// overlapping an older one (overlaps.ts) own no new nodes.
import { matchesSelector, type NodeConfig, type Pool } from '@flock/api';
import type { Node } from './nodes.js';
import { byAge, isRefused, type OverlapReport } from './overlaps.js';

export const isTerminating = (obj: { metadata: { deletionTimestamp?: unknown } }) =>
  obj.metadata.deletionTimestamp !== undefined && obj.metadata.deletionTimestamp !== null;

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
    this.refused = new Set([...overlaps].filter(([, r]) => isRefused(r)).map(([name]) => name));
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
