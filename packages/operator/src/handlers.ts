// Which Pools to reconcile when something changes. Keys are Pool names; the reconcile is
// level-triggered, so over-enqueueing only costs a plan, while missing a key would leave a
// node unconfigured. A Node event goes to the pools that select it (before or after the
// change) and the pool its NodeConfig names — no other pool's plan depends on that node.
// (With 10,000 nodes a plan takes ~50 ms: sending every node event to every pool would keep
// idle pools replanning while a busy one is being filled.)
import { matchesSelector, type NodeConfig, type Pool } from '@flock/api';
import type { Controller } from '@flock/kube';
import { deepEqual } from './equal.js';
import { nodeChanged, type Node } from './nodes.js';
import type { ClusterView } from './view.js';

/** Did a NodeConfig change in a way a plan looks at (not just its status, written by agents)? */
function nodeConfigChanged(a: NodeConfig, b: NodeConfig): boolean {
  const pick = (nc: NodeConfig) => {
    const m = nc.metadata as Record<string, unknown>;
    return [
      m['uid'],
      m['deletionTimestamp'],
      m['finalizers'],
      m['annotations'],
      m['ownerReferences'],
    ];
  };
  return (
    a.metadata.generation !== b.metadata.generation ||
    !deepEqual(pick(a), pick(b)) ||
    !deepEqual(a.spec, b.spec)
  );
}

/** Did a Pool change in a way that can affect other pools (ranges, selectors, age)? */
function poolSpecChanged(a: Pool, b: Pool): boolean {
  return (
    a.metadata.uid !== b.metadata.uid ||
    a.metadata.generation !== b.metadata.generation ||
    a.metadata.deletionTimestamp !== b.metadata.deletionTimestamp ||
    !deepEqual(a.spec, b.spec)
  );
}

/** Subscribe the controller to the caches; returns the unsubscribe function. */
export function wireHandlers(view: ClusterView, controller: Controller): () => void {
  const all = () => {
    for (const name of view.poolNames()) controller.enqueue(name);
  };
  const forNode = (...states: Node[]) => {
    const pools = view.allPools();
    for (const node of states) {
      for (const p of pools) {
        if (matchesSelector(p.spec.nodeSelector, node.metadata.labels))
          controller.enqueue(p.metadata.name);
      }
      const nc = view.config(node.metadata.name);
      if (nc) controller.enqueue(nc.spec.pool);
    }
  };
  const offs = [
    view.nodes.addHandler({
      onAdd: (n) => forNode(n),
      onUpdate: (a: Node, b: Node) => {
        if (nodeChanged(a, b)) forNode(a, b);
      },
      onDelete: (n) => forNode(n),
    }),
    view.configs.addHandler({
      onAdd: (nc) => controller.enqueue(nc.spec.pool),
      onUpdate: (a, b) => {
        if (!nodeConfigChanged(a, b)) return;
        controller.enqueue(b.spec.pool);
        if (a.spec.pool !== b.spec.pool) controller.enqueue(a.spec.pool);
      },
      // The node may now go to another pool that was waiting for it.
      onDelete: (nc) => {
        controller.enqueue(nc.spec.pool);
        all();
      },
    }),
    view.pools.addHandler({
      onAdd: all,
      // Not on status-only changes (mostly the operator's own status writes).
      onUpdate: (a, b) => {
        if (poolSpecChanged(a, b)) all();
      },
      onDelete: (p) => {
        controller.enqueue(p.metadata.name);
        all();
      },
    }),
  ];
  return () => offs.forEach((off) => off());
}
