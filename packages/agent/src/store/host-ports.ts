// hostPorts are unique on a node: one node address, port and protocol goes to one pod. The
// scheduler checks this too, but not against pods it does not know of (static pods, a pod
// still being torn down, a race): the store refuses the second one.
import { describeHostPort, hostPortsOverlap } from '@flock/api';
import type { AllocationEntry } from './schema.js';

/** Why `entry` cannot have its hostPorts beside `others` (undefined: it can). */
export function hostPortClash(
  entry: AllocationEntry,
  others: Iterable<AllocationEntry>,
): string | undefined {
  if (!entry.hostPorts?.length) return undefined;
  for (const other of others) {
    for (const theirs of other.hostPorts ?? []) {
      const mine = entry.hostPorts.find((m) => hostPortsOverlap(m, theirs));
      if (mine)
        return `hostPort ${describeHostPort(mine)} is taken on this node by pod ${other.namespace}/${other.pod} (${describeHostPort(theirs)})`;
    }
  }
  return undefined;
}
