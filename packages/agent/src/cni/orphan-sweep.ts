// The orphan sweep: committed allocations whose pod is gone from this node are torn down
// (kernel state, store entry, addresses), and with them their routes and announcements.
//
// The rule (docs/announcements.md): an entry is swept when
//   1. its pod is not live in this node's pod cache (absent, another UID, or terminated), and
//   2. it is older than the grace period (default 10 s): a pod that was just ADDed may not be
//      in the cache yet, and
//   3. a fresh GET from the API server agrees (404, another UID, or terminated): the cache may
//      lag, the API server is the truth. A failed GET keeps the entry for the next sweep.
// Only after the pod cache has synced. Sweeps run one at a time (OrphanSweep's Loop): once the
// cache has synced, on pod deletions, replacements and terminations, when a deferred entry
// leaves its grace period, and every --sweep-period.
import type { Logger, Pod } from '@flock/api';
import { Loop, type CacheView, type KubeTransport } from '@flock/kube';
import { steadyNow } from '@flock/ipam';
import { settled, type Component } from '../core/lifecycle.js';
import type { AgentMetrics } from '../core/metrics.js';
import { NOT_LIVE_WHY, entryLiveness, type NotLiveReason, type PodOf } from '../node/liveness.js';
import { fetchPod, whenSynced } from '../node/pods.js';
import { hostVethName } from '../datapath/index.js';
import type { AllocationEntry, AllocationStore } from '../store/index.js';

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
  /**
   * The names of flock's host veths now. A sandbox's network namespace takes its veth pair
   * with it when it goes: an entry of a live pod whose veth is gone belongs to a sandbox that
   * is gone (a runtime that sent no DEL, and containerd 2 sends no CNI GC). Absent: unchecked.
   */
  hostVeths?: () => Promise<ReadonlySet<string>>;
  now?: () => number;
  logger: Logger;
}

/** Why the sweep removed an entry: its pod is not live, its sandbox is gone, or an earlier teardown failed. */
type RemovalReason = NotLiveReason | 'sandbox-gone' | 'teardown-retry';
const REMOVAL_WHY: Record<RemovalReason, string> = {
  ...NOT_LIVE_WHY,
  'sandbox-gone':
    "the pod lives on, but this attachment's sandbox is gone (its veth went with its network namespace)",
  'teardown-retry': 'an earlier teardown of it (a DEL or a sweep) failed half-way',
};

interface SweepResult {
  removed: { entry: AllocationEntry; reason: RemovalReason }[];
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
    this.now = deps.now ?? steadyNow;
  }

  async sweep(trigger: string): Promise<SweepResult> {
    const result: SweepResult = { removed: [], deferred: 0, keptByApi: 0, errors: 0 };
    // `now` before the listing: an entry past its grace at `now` had its veth long before.
    const now = this.now();
    let veths: ReadonlySet<string> | undefined;
    try {
      veths = await this.deps.hostVeths?.();
    } catch (error) {
      result.errors++;
      this.deps.logger.warn('orphan sweep: cannot list the host veths; sandboxes not checked', {
        error: String(error),
      });
    }
    for (const entry of this.deps.entries()) {
      // A teardown that failed half-way (the entry was marked): finish it, whatever the pod.
      if (entry.removing) {
        const still = this.deps.current(entry);
        if (still?.removing && still.createdAt === entry.createdAt)
          await this.remove(still, 'teardown-retry', trigger, result);
        continue;
      }
      if (entry.state !== 'committed') continue;
      const eligibleAt = Date.parse(entry.createdAt) + this.deps.graceMs;
      if (entryLiveness(entry, this.deps.podOf(entry.namespace, entry.pod)).live) {
        const veth = hostVethName(entry.containerID, entry.ifname);
        if (veths && eligibleAt <= now && !veths.has(veth)) {
          const still = this.deps.current(entry);
          if (still?.state === 'committed' && still.createdAt === entry.createdAt)
            await this.remove(still, 'sandbox-gone', trigger, result);
        }
        continue;
      }
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
      await this.remove(still, liveness.reason, trigger, result);
    }
    return result;
  }

  private async remove(
    entry: AllocationEntry,
    reason: RemovalReason,
    trigger: string,
    result: SweepResult,
  ): Promise<void> {
    try {
      await this.deps.undo(entry);
    } catch (error) {
      result.errors++;
      this.deps.logger.error('orphan sweep: tearing down an orphan failed; retried next sweep', {
        pod: `${entry.namespace}/${entry.pod}`,
        containerID: entry.containerID,
        error: String(error),
      });
      return;
    }
    result.removed.push({ entry, reason });
    this.deps.logger.info('orphan sweep removed an allocation whose pod is gone', {
      trigger,
      pod: `${entry.namespace}/${entry.pod}`,
      podUID: entry.podUID,
      containerID: entry.containerID,
      ip6: entry.ip6,
      ip4: entry.ip4,
      anycast: entry.anycast,
      why: REMOVAL_WHY[reason],
    });
  }
}

interface OrphanSweepOptions {
  store: Pick<AllocationStore, 'entries' | 'get'>;
  /** This node's pods (the pod cache's by-node view). */
  pods: CacheView<Pod>;
  transport: KubeTransport;
  /** Tear down an entry unless an ADD or DEL changed it meanwhile (CniHandlers.undoIfUnchanged). */
  undo: (entry: AllocationEntry) => Promise<unknown>;
  /** flock's host veths (Datapath.listPodVeths): sandboxes that are gone. */
  hostVeths?: () => Promise<ReadonlySet<string>>;
  graceMs: number;
  periodMs: number;
  logger: Logger;
  metrics?: AgentMetrics;
  now?: () => number;
}

/** The sweep as a part of the agent: its Loop and its triggers. */
export class OrphanSweep implements Component {
  readonly name = 'orphan sweep';
  private readonly sweeper: OrphanSweeper;
  private readonly loop: Loop;
  private trigger = 'start-up';
  private live = false;
  private stopped = false;
  private cleanup: (() => void) | undefined;

  constructor(private readonly options: OrphanSweepOptions) {
    const { store, pods, logger } = options;
    this.sweeper = new OrphanSweeper({
      entries: () => store.entries(),
      current: (e) => store.get(e.containerID, e.ifname),
      podOf: (namespace, name) => pods.getObject(name, namespace),
      fetchPod: (namespace, name) => fetchPod(options.transport, namespace, name),
      undo: async (e) => void (await options.undo(e)),
      graceMs: options.graceMs,
      ...(options.hostVeths ? { hostVeths: options.hostVeths } : {}),
      ...(options.now ? { now: options.now } : {}),
      logger,
    });
    this.loop = new Loop({
      name: 'orphan-sweep',
      sync: () => this.sweep(),
      periodMs: options.periodMs,
      ...(options.metrics ? { metrics: options.metrics.loops } : {}),
      onError: (error) => logger.error('orphan sweep failed', { error: String(error) }),
    });
  }

  /** Watch this node's pods; sweep once the pod cache has synced, then on triggers. */
  async start(): Promise<void> {
    this.cleanup = this.options.pods.addHandler(
      {
        onUpdate: (old, pod) => {
          if (old.metadata.uid !== pod.metadata.uid) this.soon('pod replaced');
          else if (!entryLiveness({ podUID: pod.metadata.uid ?? '' }, pod).live)
            this.soon('pod terminated');
        },
        onDelete: () => this.soon('pod deleted'),
      },
      { replay: false },
    );
    await whenSynced(this.options.pods, () => this.begin(), {
      logger: this.options.logger,
      waiting: 'the orphan sweep',
    });
  }

  async stop(): Promise<void> {
    this.stopped = true;
    this.live = false;
    this.cleanup?.();
    await this.loop.stop();
  }

  /** Run one sweep now (behind a running one). */
  sweepNow(trigger = 'requested'): Promise<void> {
    this.trigger = trigger;
    return settled(this.loop.run());
  }

  private async begin(): Promise<void> {
    if (this.stopped || this.live) return;
    this.live = true;
    await this.sweepNow('pod cache synced');
    this.loop.start();
  }

  private soon(trigger: string): void {
    if (!this.live) return;
    this.trigger = trigger;
    this.loop.trigger();
  }

  private async sweep(): Promise<void> {
    if (!this.live) return;
    const result = await this.sweeper.sweep(this.trigger);
    for (const r of result.removed) this.options.metrics?.orphanRemovals.inc({ reason: r.reason });
    this.trigger = 'periodic';
    if (result.nextEligibleAt !== undefined) {
      const now = this.options.now?.() ?? steadyNow();
      this.trigger = 'grace period over';
      // At most one grace period: entry times are never ahead of the clock (the store's load
      // sees to it), and a timer past 2^31 ms would fire at once.
      const waitMs = Math.min(Math.max(0, result.nextEligibleAt - now), this.options.graceMs);
      this.loop.trigger(waitMs + 100);
    }
  }
}
