// One reconcile of one Pool: plan (pure), then write — the quarantine into the Pool's status
// before any finalizer is released, then releases, deletions and applies with bounded
// concurrency, then the status if it changed, then Events. Every write checks the signal
// first: it aborts the moment leadership is lost.
import type { AddressClaim, NodeConfig } from '@flock/api';
import {
  NODECONFIG_KIND,
  OPERATOR_FIELD_MANAGER,
  Pool,
  POOL_KIND,
  type PoolStatus,
} from '@flock/api';
import {
  createNodeConfigClient,
  errorMessage,
  isNotFound,
  mergePatch,
  NODECONFIGS,
  patchStatus,
  POOLS,
  TerminalError,
  type EventInput,
  type EventSubject,
  type KubeTransport,
  type Logger,
  type NodeConfigClient,
  type ReconcileContext,
  type ReconcileResult,
} from '@flock/kube';
import type { PlannedEvent } from './conditions.js';
import { deepEqual } from './equal.js';
import type { Limiter } from './limiter.js';
import type { OperatorMetrics } from './metrics.js';
import { planOrphans, planPool, type ApplyStep, type ObjectRef, type ReleaseStep } from './plan.js';
import type { ClusterView } from './view.js';

interface EventSink {
  event(subject: EventSubject, input: EventInput): Promise<void>;
}

interface ReconcilerOptions {
  transport: KubeTransport;
  view: ClusterView;
  /** Shared by every reconcile: the bound on writes in flight. */
  writes: Limiter;
  /** Events are best effort and trail the writes on their own small bound. */
  eventWrites: Limiter;
  events: EventSink;
  logger: Logger;
  metrics: OperatorMetrics;
  quarantineMs: number;
  /** Service addresses for the pools' status (the claims, the Services waiting per pool). */
  serviceAddresses?: ServiceAddressSource;
  now?: () => number;
}

export interface ServiceAddressSource {
  claims(): AddressClaim[];
  waiting(pool: string): string[];
}

/** The Pool was deleted after the view last saw it: its delete event reconciles the rest. */
class PoolGone extends Error {}

class Stopped extends Error {
  constructor() {
    super('stopped: leadership lost or shutting down');
  }
}

export class PoolReconciler {
  private readonly configs: NodeConfigClient;
  private readonly now: () => number;

  constructor(private readonly o: ReconcilerOptions) {
    this.configs = createNodeConfigClient(o.transport, {
      fieldManager: OPERATOR_FIELD_MANAGER,
      logger: o.logger,
    });
    this.now = o.now ?? Date.now;
  }

  async reconcile(name: string, context: ReconcileContext): Promise<ReconcileResult | void> {
    try {
      return await this.reconcilePool(name, context);
    } catch (err) {
      if (!(err instanceof PoolGone)) throw err;
      // Not a failure to retry with backoff: the watch's delete event queues this pool again
      // and then cleans up after it (cleanUpAfter).
      this.o.logger.debug('pool deleted while it was reconciled', { pool: name });
    }
  }

  private async reconcilePool(
    name: string,
    { signal }: ReconcileContext,
  ): Promise<ReconcileResult | void> {
    const { view } = this.o;
    const pool = view.pool(name);
    if (!pool) return this.cleanUpAfter(name, signal);
    const plan = planPool({
      pool,
      pools: view.allPools(),
      nodes: view.allNodes(),
      nodeConfigs: view.allConfigs(),
      now: this.now(),
      quarantineMs: this.o.quarantineMs,
      ...(this.o.serviceAddresses
        ? {
            serviceClaims: this.o.serviceAddresses.claims(),
            waitingServices: this.o.serviceAddresses.waiting(name),
          }
        : {}),
    });
    this.o.logger.debug('pool planned', {
      pool: name,
      nodes: plan.status.nodes,
      apply: plan.apply.length,
      delete: plan.delete.length,
      release: plan.release.length,
    });
    // The quarantine must be stored before a finalizer goes: afterwards nothing remembers it.
    if (plan.release.length) await this.writeStatus(pool, plan.status, signal);
    const errors = [
      ...(await this.o.writes.each(plan.release, (r) => this.release(r, signal), signal)),
      ...(await this.o.writes.each(plan.delete, (d) => this.remove(d, signal), signal)),
      ...(await this.o.writes.each(plan.apply, (a) => this.apply(a, signal), signal)),
    ];
    if (signal.aborted) throw new Stopped();
    await this.writeStatus(view.pool(name) ?? pool, plan.status, signal);
    this.o.metrics.poolStatus(name, plan.status);
    for (const e of plan.events) this.emit(poolSubject(pool), e);
    if (errors.length) {
      throw new Error(
        `${errors.length} write(s) for pool ${name} failed, first: ${errorMessage(errors[0])}`,
      );
    }
    if (plan.invalid) throw new TerminalError(`pool ${name}: ${plan.invalid}`);
    if (plan.apply.length || plan.delete.length || plan.release.length) {
      this.o.logger.info('pool reconciled', {
        pool: name,
        applied: plan.apply.length,
        created: plan.apply.filter((a) => a.created).length,
        deleted: plan.delete.length,
        released: plan.release.length,
      });
    }
    return plan.requeueAfterMs !== undefined ? { requeueAfter: plan.requeueAfterMs } : undefined;
  }

  /** The pool is gone: its NodeConfigs go too (there is no status left to quarantine into). */
  private async cleanUpAfter(name: string, signal: AbortSignal): Promise<void> {
    const plan = planOrphans(name, this.o.view.allConfigs());
    await this.o.metrics.poolGone(name);
    if (!plan.delete.length && !plan.release.length) return;
    this.o.logger.warn('pool is gone: deleting its NodeConfigs without quarantine', {
      pool: name,
      nodeConfigs: plan.delete.length,
    });
    const errors = [
      ...(await this.o.writes.each(plan.release, (r) => this.release(r, signal), signal)),
      ...(await this.o.writes.each(plan.delete, (d) => this.remove(d, signal), signal)),
    ];
    if (errors.length)
      throw new Error(`cleaning up after pool ${name}: ${errorMessage(errors[0])}`);
  }

  private async writeStatus(pool: Pool, status: PoolStatus, signal: AbortSignal): Promise<void> {
    const current = (pool.status ?? {}) as Record<string, unknown>;
    if (deepEqual(current, status)) return;
    if (signal.aborted) throw new Stopped();
    // A merge patch replaces lists whole; fields that went away are deleted with null. The
    // resourceVersion precondition keeps a stale view from overwriting a newer quarantine.
    const body: Record<string, unknown> = { ...status };
    for (const key of Object.keys(current)) if (!(key in body)) body[key] = null;
    try {
      const stored = await patchStatus(
        this.o.transport,
        POOLS,
        pool.metadata.name,
        undefined,
        body,
        {
          fieldManager: OPERATOR_FIELD_MANAGER,
          mode: 'merge',
          ...(pool.metadata.resourceVersion
            ? { resourceVersion: pool.metadata.resourceVersion }
            : {}),
          signal,
        },
      );
      const parsed = Pool.safeParse(stored);
      if (parsed.success) this.o.view.poolWrites.record(parsed.data);
      this.o.metrics.write('pool_status', true);
    } catch (err) {
      if (isNotFound(err)) throw new PoolGone();
      this.o.metrics.write('pool_status', false);
      throw err;
    }
  }

  private async apply(step: ApplyStep, signal: AbortSignal): Promise<void> {
    if (signal.aborted) throw new Stopped();
    try {
      const stored = await this.configs.apply(step.object, { signal });
      this.o.view.configWrites.record(stored);
      this.o.metrics.write('nodeconfig_apply', true);
      if (step.created) {
        const { cidr6, cidr4, pool } = step.object.spec;
        this.emit(nodeConfigSubject(stored), {
          type: 'Normal',
          reason: 'PrefixAssigned',
          action: 'Create',
          note: `NodeConfig for node ${step.node} created in pool ${pool} with prefix ${cidr6}${cidr4 ? ` and ${cidr4}` : ''}`,
        });
      }
    } catch (err) {
      this.o.metrics.write('nodeconfig_apply', false);
      throw new Error(`apply NodeConfig ${step.node}: ${errorMessage(err)}`, { cause: err });
    }
  }

  private async remove(ref: ObjectRef, signal: AbortSignal): Promise<void> {
    if (signal.aborted) throw new Stopped();
    try {
      // The finalizer keeps it until the next reconcile has quarantined its prefixes.
      await this.configs.delete(ref.name, { ...(ref.uid ? { uid: ref.uid } : {}), signal });
      this.o.metrics.write('nodeconfig_delete', true);
      this.o.logger.info('deleting NodeConfig: its node left the pool', { nodeConfig: ref.name });
    } catch (err) {
      this.o.metrics.write('nodeconfig_delete', false);
      throw new Error(`delete NodeConfig ${ref.name}: ${errorMessage(err)}`, { cause: err });
    }
  }

  private async release(step: ReleaseStep, signal: AbortSignal): Promise<void> {
    if (signal.aborted) throw new Stopped();
    try {
      await mergePatch(
        this.o.transport,
        NODECONFIGS,
        step.name,
        undefined,
        {
          metadata: {
            finalizers: step.finalizers,
            ...(step.resourceVersion ? { resourceVersion: step.resourceVersion } : {}),
          },
        },
        { fieldManager: OPERATOR_FIELD_MANAGER, signal },
      );
      this.o.metrics.write('finalizer_release', true);
      this.o.logger.info('prefixes quarantined, NodeConfig released', { nodeConfig: step.name });
    } catch (err) {
      if (isNotFound(err)) return;
      this.o.metrics.write('finalizer_release', false);
      throw new Error(`release NodeConfig ${step.name}: ${errorMessage(err)}`, { cause: err });
    }
  }

  private emit(subject: EventSubject, e: PlannedEvent): void {
    void this.o.eventWrites.run(() => this.o.events.event(subject, e));
  }
}

const poolSubject = (pool: Pool): EventSubject => ({
  apiVersion: pool.apiVersion,
  kind: POOL_KIND,
  metadata: { name: pool.metadata.name, ...(pool.metadata.uid ? { uid: pool.metadata.uid } : {}) },
});

const nodeConfigSubject = (nc: NodeConfig): EventSubject => ({
  apiVersion: nc.apiVersion,
  kind: NODECONFIG_KIND,
  metadata: { name: nc.metadata.name, ...(nc.metadata.uid ? { uid: nc.metadata.uid } : {}) },
});
