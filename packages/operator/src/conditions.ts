// A pool's conditions from the facts of one plan, and the Events worth telling a user: a
// Warning when a problem appears or its description changes (not on every reconcile).
import type { PrefixCounts } from '@flock/ipam';
import { PoolConditions, setCondition, type Condition, type ConditionInput } from '@flock/api';
import { isRefused, withdrawnLists, type Clash, type OverlapReport } from './overlaps.js';
import type { ServiceAddressFacts } from './service-pool-status.js';

export interface PoolFacts {
  generation: number | undefined;
  /** Why the pool's ranges cannot be carved at all. */
  invalid?: string | undefined;
  overlap: OverlapReport;
  /** Set when nodes wait for a prefix. */
  exhausted?: { message: string; waiting: string[] } | undefined;
  /** Nodes also selected by other pools, and where each one stays. */
  conflicts: { node: string; pools: string[]; owner: string | undefined }[];
  /** NodeConfigs whose prefixes do not fit the pool (left untouched). */
  problems: string[];
  selected: number;
  configured: number;
  ipv6: PrefixCounts | undefined;
  /** The pool's Service addresses (absent: it has no services list). */
  services?: ServiceAddressFacts | undefined;
}

export interface PlannedEvent {
  type: 'Normal' | 'Warning';
  reason: string;
  action: string;
  note: string;
}

/** "a, b, c and 4 more" */
function someOf(items: readonly string[], max = 5): string {
  const shown = items.slice(0, max).join(', ');
  return items.length > max ? `${shown} and ${items.length - max} more` : shown;
}

function describeConflicts(conflicts: PoolFacts['conflicts']): string {
  const lines = conflicts.slice(0, 5).map((c) => {
    const where = c.owner ? `stays in ${c.owner}` : 'in no pool';
    return `${c.node} (pools ${c.pools.join(', ')}; ${where})`;
  });
  const more = conflicts.length > 5 ? ` and ${conflicts.length - 5} more` : '';
  return `${conflicts.length} node(s) are selected by more than one pool: ${lines.join('; ')}${more}. A node keeps the pool its NodeConfig names, else the oldest pool; make the nodeSelectors disjoint.`;
}

/** Both ranges, and the other pool (a floating clash names both pools itself). */
const describeClash = (o: Clash) => (o.withdraws ? o.why : `${o.why} (pool ${o.pool})`);

type Make = (type: string, on: boolean, reason: string, message: string) => ConditionInput;

function overlapCondition(
  overlap: OverlapReport,
  c: Make,
  olderClash: string,
  newerClash: string,
): ConditionInput {
  const type = PoolConditions.Overlap;
  if (isRefused(overlap))
    return c(
      type,
      true,
      'OverlapsOlderPool',
      `refused: ${olderClash}. Change this pool's ranges or delete it.`,
    );
  const withdrawn = [...withdrawnLists(overlap)].join(' and ');
  if (withdrawn)
    return c(
      type,
      true,
      'FloatingRangesWithdrawn',
      `its ${withdrawn} ranges are withdrawn from its NodeConfigs (nothing of them is claimable or announced): ${olderClash}. Change the ranges of one pool, or list the same range with the same grants in both.`,
    );
  if (overlap.newer.some((o) => !o.withdraws))
    return c(
      type,
      true,
      'NewerPoolRefused',
      `a newer pool overlaps this one and is refused; this pool keeps working: ${newerClash}`,
    );
  if (overlap.newer.length)
    return c(
      type,
      true,
      'NewerPoolWithdrawn',
      `a newer pool's floating ranges overlap this one's and are withdrawn from its nodes; this pool keeps working: ${newerClash}`,
    );
  return c(type, false, 'NoOverlap', 'no other pool overlaps these ranges');
}

function inputs(f: PoolFacts): ConditionInput[] {
  const gen = f.generation === undefined ? {} : { observedGeneration: f.generation };
  const c: Make = (type, on, reason, message) => ({
    type,
    status: on ? 'True' : 'False',
    reason,
    message,
    ...gen,
  });
  const olderClash = f.overlap.older.map(describeClash).join('; ');
  const newerClash = f.overlap.newer.map(describeClash).join('; ');
  const refused = isRefused(f.overlap);
  const withdrawn = [...withdrawnLists(f.overlap)].join(' and ');
  const configured = `${f.configured} of ${f.selected} selected node(s) have a NodeConfig of this pool`;
  let ready: ConditionInput;
  if (f.invalid) ready = c('Ready', false, 'InvalidRange', f.invalid);
  else if (refused)
    ready = c(
      'Ready',
      false,
      'Overlap',
      `not acted on: its ranges overlap an older pool: ${olderClash}`,
    );
  else if (withdrawn)
    ready = c(
      'Ready',
      false,
      'FloatingOverlap',
      `${configured}, without its ${withdrawn} ranges: ${olderClash}`,
    );
  else if (f.exhausted)
    ready = c(
      'Ready',
      false,
      'Exhausted',
      `${f.exhausted.waiting.length} node(s) wait for a prefix: ${f.exhausted.message}`,
    );
  else ready = c('Ready', true, 'Reconciled', configured);
  return [
    ready,
    f.exhausted
      ? c(
          PoolConditions.Exhausted,
          true,
          'NoFreePrefix',
          `${f.exhausted.message}; waiting: ${someOf(f.exhausted.waiting)}`,
        )
      : c(
          PoolConditions.Exhausted,
          false,
          'PrefixesAvailable',
          f.ipv6 ? `${f.ipv6.free} IPv6 node prefix(es) free` : 'prefixes available',
        ),
    overlapCondition(f.overlap, c, olderClash, newerClash),
    f.conflicts.length
      ? c(PoolConditions.NodeConflict, true, 'SelectedByOtherPools', describeConflicts(f.conflicts))
      : c(PoolConditions.NodeConflict, false, 'NoConflict', 'no node is selected by another pool'),
    f.problems.length
      ? c(
          PoolConditions.PrefixMismatch,
          true,
          'AssignmentsDoNotFit',
          `${f.problems.length} NodeConfig(s) left untouched: ${someOf(f.problems, 3)}. Delete such a NodeConfig to have the node carved anew.`,
        )
      : c(
          PoolConditions.PrefixMismatch,
          false,
          'AllAssignmentsFit',
          'every NodeConfig of this pool fits its ranges',
        ),
    ...(f.services ? [servicesCondition(f.services, c)] : []),
  ];
}

function servicesCondition(s: ServiceAddressFacts, c: Make): ConditionInput {
  const type = PoolConditions.ServicesExhausted;
  if (s.waiting.length)
    return c(
      type,
      true,
      'NoFreeAddress',
      `${s.waiting.length} Service(s) wait for an address: ${someOf(s.waiting)}`,
    );
  const free = (['ipv6', 'ipv4'] as const)
    .flatMap((f) => (s.counts[f] ? [`${s.counts[f].free} ${f === 'ipv6' ? 'IPv6' : 'IPv4'}`] : []))
    .join(' and ');
  return c(type, false, 'AddressesAvailable', `${free || 'no'} Service address(es) free`);
}

const WATCHED = new Set<string>([
  PoolConditions.Exhausted,
  PoolConditions.ServicesExhausted,
  PoolConditions.Overlap,
  PoolConditions.NodeConflict,
  PoolConditions.PrefixMismatch,
]);

/** The new conditions (transition times kept when the status did not change) and the events. */
export function poolConditions(
  previous: Condition[] | undefined,
  facts: PoolFacts,
  now: Date,
): { conditions: Condition[]; events: PlannedEvent[] } {
  let conditions: Condition[] = [];
  const events: PlannedEvent[] = [];
  for (const next of inputs(facts)) {
    const prev = previous?.find((p) => p.type === next.type);
    conditions = setCondition(conditions, next, now);
    const kept = conditions.find((x) => x.type === next.type) as Condition;
    if (prev && prev.status === next.status) kept.lastTransitionTime = prev.lastTransitionTime;
    const changed = !prev || prev.status !== next.status || prev.message !== next.message;
    if (WATCHED.has(next.type) && next.status === 'True' && changed) {
      events.push({ type: 'Warning', reason: next.type, action: 'Reconcile', note: next.message });
    }
    if (
      next.type === PoolConditions.Exhausted &&
      next.status === 'False' &&
      prev?.status === 'True'
    ) {
      events.push({
        type: 'Normal',
        reason: 'PrefixesAvailable',
        action: 'Reconcile',
        note: next.message,
      });
    }
  }
  return { conditions, events };
}
