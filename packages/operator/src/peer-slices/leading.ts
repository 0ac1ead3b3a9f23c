// What the operator's publishers (PeerSlices, NodePeers) share: a controller that runs only
// while this replica leads, started once the caches it plans from have synced (before that an
// empty cache would read as "everything is gone": delete every object), and the bookkeeping of
// their own writes (read-your-writes over the cache of what they publish).
import type {
  CacheHandler,
  KubeObject,
  Logger,
  MetricsOptions,
  ReconcileContext,
} from '@flock/kube';
import { Controller } from '@flock/kube';
import { RecentWrites } from '../recent-writes.js';

/** The objects a publisher wrote or deleted that its watch has not shown back yet. */
export class OwnWrites<T extends KubeObject> {
  /** Written and not yet seen back by the watch (created ones are only here). */
  readonly written = new RecentWrites<T>();
  /** Deleted and not yet seen gone by the watch. */
  readonly deleted = new Set<string>();

  /**
   * Handlers for the cache of the published kind: every event is observed, and `changed` runs
   * (an object changed or deleted by anyone else is put back; our own writes find nothing to do).
   */
  handler(changed: (obj: T) => void): CacheHandler<T> {
    return {
      onAdd: (obj) => {
        this.written.observe(obj);
        changed(obj);
      },
      onUpdate: (_, obj) => {
        this.written.observe(obj);
        changed(obj);
      },
      onDelete: (obj) => {
        this.written.observe(obj);
        this.deleted.delete(obj.metadata.name as string);
        changed(obj);
      },
    };
  }

  clear(): void {
    this.written.clear();
    this.deleted.clear();
  }
}

export interface LeaderControllerOptions {
  name: string;
  workers: number;
  logger: Logger;
  metricsOptions?: MetricsOptions;
  reconcile: (key: string, ctx: ReconcileContext) => Promise<void>;
  /** The caches' first sync, awaited before the first reconcile. */
  synced: () => Promise<unknown>;
  /** Every key to reconcile when leading starts. */
  keys: () => Iterable<string>;
  /** Run when leading stops (forget what was written). */
  onStop?: () => void;
}

export class LeaderController {
  private controller: Controller | undefined;
  private calls = 0;

  constructor(private readonly o: LeaderControllerOptions) {}

  enqueue(key: string): void {
    this.controller?.enqueue(key);
  }

  enqueueAfter(key: string, ms: number): void {
    this.controller?.enqueueAfter(key, ms);
  }

  /** Lead (reconcile every key, then follow changes) or stop. A later call wins. */
  async setLeading(leading: boolean): Promise<void> {
    const call = ++this.calls;
    if (!leading) {
      const c = this.controller;
      this.controller = undefined;
      await c?.stop();
      this.o.onStop?.();
      return;
    }
    try {
      await this.o.synced();
    } catch {
      return; // stopped before they synced
    }
    if (this.controller || call !== this.calls) return;
    const controller = new Controller({
      name: this.o.name,
      workers: this.o.workers,
      logger: this.o.logger,
      ...(this.o.metricsOptions ? { metrics: this.o.metricsOptions } : {}),
      reconcile: this.o.reconcile,
    });
    this.controller = controller;
    for (const key of this.o.keys()) controller.enqueue(key);
    controller.start();
  }
}
