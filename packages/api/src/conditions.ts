// Helpers for status conditions: set one without touching lastTransitionTime unless status changed.
import type { Condition } from './meta.js';

export type ConditionInput = Omit<Condition, 'lastTransitionTime'>;

/** Return the list with `next` set; keeps lastTransitionTime when the status did not change. */
export function setCondition(
  list: Condition[] | undefined,
  next: ConditionInput,
  now: Date = new Date(),
): Condition[] {
  const current = list ?? [];
  const prev = current.find((c) => c.type === next.type);
  const lastTransitionTime =
    prev && prev.status === next.status
      ? prev.lastTransitionTime
      : now.toISOString().replace(/\.\d{3}Z$/, 'Z');
  const merged: Condition = { ...next, lastTransitionTime };
  return prev ? current.map((c) => (c.type === next.type ? merged : c)) : [...current, merged];
}
