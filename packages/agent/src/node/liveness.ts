// Is the pod that owns an allocation alive on this node? The one rule every announcement and
// the orphan sweep share: the pod object exists (in this node's pod cache, or on the API
// server for the sweep's re-check) with the UID recorded at ADD, and has not terminated. A pod
// deleted and re-created under the same name is another pod: its UID differs.
import type { AllocationEntry } from '../store/index.js';
import { isPodReady, type Pod } from '@flock/api';

/** This node's pod of that name, from the cache. */
export type PodOf = (namespace: string, name: string) => Pod | undefined;

export type NotLiveReason = 'absent' | 'uid-differs' | 'terminated';

/**
 * `terminating`: the pod has a deletionTimestamp. It still runs (graceful shutdown, or a dead
 * kubelet that never confirms), but its pinned addresses and anycast must not be announced any
 * more: a replacement pod elsewhere may already hold the same pinned address (2026-08-16).
 */
type Liveness =
  { live: true; ready: boolean; terminating: boolean } | { live: false; reason: NotLiveReason };

/** Phases after which a pod's containers never run again (its sandbox is torn down). */
const TERMINAL_PHASES: ReadonlySet<string> = new Set(['Succeeded', 'Failed']);

export function entryLiveness(
  entry: Pick<AllocationEntry, 'podUID'>,
  pod: Pod | undefined,
): Liveness {
  if (!pod) return { live: false, reason: 'absent' };
  if (pod.metadata.uid !== entry.podUID) return { live: false, reason: 'uid-differs' };
  if (TERMINAL_PHASES.has(pod.status?.phase ?? '')) return { live: false, reason: 'terminated' };
  return {
    live: true,
    ready: isPodReady(pod),
    terminating: pod.metadata.deletionTimestamp !== undefined,
  };
}

/** The parts of a pod the announcements depend on; a cache update that keeps it changes nothing. */
export function livenessSignature(pod: Pod | undefined): string {
  if (!pod) return '';
  const terminating = pod.metadata.deletionTimestamp !== undefined;
  return `${pod.metadata.uid ?? ''}|${pod.status?.phase ?? ''}|${isPodReady(pod)}|${terminating}`;
}

export const NOT_LIVE_WHY: Record<NotLiveReason, string> = {
  absent: 'the pod no longer exists',
  'uid-differs': 'a different pod (new UID) now has that name',
  terminated: 'the pod has terminated (phase Succeeded or Failed)',
};
