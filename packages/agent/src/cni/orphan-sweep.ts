// The orphan sweep: committed allocations whose pod is gone from this node are torn down
// (kernel state, store entry, addresses), and with them their routes and announcements.
//
// The rule (docs/announcements.md): an entry is swept when
//   1. its pod is not live in this node's pod cache (absent, another UID, or terminated), and
//   2. it is older than the grace period (default 10 s): a pod that was just ADDed may not be
//      in the cache yet, and
//   3. a fresh GET from the API server agrees (404, another UID, or terminated): the cache may
//      lag, the API server is the truth. A failed GET keeps the entry for the next sweep.
// Only after the pod cache has synced (the caller's job). Sweeps run one at a time.
import type { Logger, Pod } from '@flock/api';
import type { AllocationEntry } from '../store/index.js';
import { NOT_LIVE_WHY, entryLiveness, type NotLiveReason, type PodOf } from '../node/liveness.js';

export interface OrphanSweepDeps {
  entries: () => AllocationEntry[];
  /** Re-read one entry right before it is removed (an ADD or DEL may have run meanwhile). */
  current: (entry: AllocationEntry) => AllocationEntry | undefined;
  podOf: PodOf;
  /** GET the pod from the API server; undefined when it does not exist; throws on errors. */
  fetchPod: (namespace: string, name: string) => Promise<Pod | undefined>;
  /** Tear down the entry's kernel state, remove it, release its addresses. */
  undo: (entry: AllocationEntry) => Promise<void>;
  graceMs: number;
  now?: () => number;
  logger: Logger;
}

interface SweepResult {
  removed: { entry: AllocationEntry; reason: NotLiveReason }[];
  /** Entries not live in the cache but still inside their grace period. */
  deferred: number;
  /** When the earliest deferred entry leaves its grace period (epoch ms). */
  nextEligibleAt?: number;
  /** Entries the API server still reports as live (the cache lags). */
  keptByApi: number;
  /** Entries kept because the API server could not be asked or the teardown failed. */
  errors: number;
}

export class OrphanSweeper {
  private readonly now: () => number;

  constructor(private readonly deps: OrphanSweepDeps) {
    this.now = deps.now ?? Date.now;
  }

  async sweep(trigger: string): Promise<SweepResult> {
    const result: SweepResult = { removed: [], deferred: 0, keptByApi: 0, errors: 0 };
    const now = this.now();
    for (const entry of this.deps.entries()) {
      if (entry.state !== 'committed') continue;
      if (entryLiveness(entry, this.deps.podOf(entry.namespace, entry.pod)).live) continue;
      const eligibleAt = Date.parse(entry.createdAt) + this.deps.graceMs;
      if (eligibleAt > now) {
        result.deferred++;
        result.nextEligibleAt = Math.min(result.nextEligibleAt ?? Infinity, eligibleAt);
        continue;
      }
      let fresh: Pod | undefined;
      try {
        fresh = await this.deps.fetchPod(entry.namespace, entry.pod);
      } catch (error) {
        result.errors++;
        this.deps.logger.warn('orphan sweep: cannot ask the API server; entry kept', {
          pod: `${entry.namespace}/${entry.pod}`,
          error: String(error),
        });
        continue;
      }
      const liveness = entryLiveness(entry, fresh);
      if (liveness.live) {
        result.keptByApi++;
        continue;
      }
      const still = this.deps.current(entry);
      if (!still || still.state !== 'committed' || still.createdAt !== entry.createdAt) continue;
      try {
        await this.deps.undo(still);
      } catch (error) {
        result.errors++;
        this.deps.logger.error('orphan sweep: tearing down an orphan failed; retried next sweep', {
          pod: `${still.namespace}/${still.pod}`,
          containerID: still.containerID,
          error: String(error),
        });
        continue;
      }
      result.removed.push({ entry: still, reason: liveness.reason });
      this.deps.logger.info('orphan sweep removed an allocation whose pod is gone', {
        trigger,
        pod: `${still.namespace}/${still.pod}`,
        podUID: still.podUID,
        containerID: still.containerID,
        ip6: still.ip6,
        ip4: still.ip4,
        anycast: still.anycast,
        why: NOT_LIVE_WHY[liveness.reason],
      });
    }
    return result;
  }
}
