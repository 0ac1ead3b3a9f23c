// The one status condition flock writes on sig-network's ClusterNetworkPolicies: whether flock
// can enforce the policy as written. That is a function of the spec alone (the same on every
// node), so the leader-elected operator writes it — N agents would overwrite one another, and a
// condition per node would grow every policy with the cluster. What each node did is reported
// there (Warning Events, NodeConfig PolicyApplied). The CRD is optional: its presence is asked
// at start and every `recheckMs` while absent; the cache runs on leader and standbys alike, the
// controller that writes only while leading.
import { enforceability, setCondition, type Condition, type ConditionInput } from '@flock/api';
import {
  CLUSTER_NETWORK_POLICIES,
  Cache,
  Controller,
  patchStatus,
  resourceListWatch,
  whenServed,
  type WhenServedOptions,
  type KubeObject,
  type KubeTransport,
  type Logger,
  type MetricsOptions,
} from '@flock/kube';

/** The condition type (flock's own domain: other implementations may write theirs beside it). */
export const ENFORCEABLE_CONDITION = 'flock.fritzlab.net/Enforceable';

/** The condition a ClusterNetworkPolicy should carry. */
export function enforceableCondition(raw: KubeObject): ConditionInput {
  const gen =
    raw.metadata.generation !== undefined ? { observedGeneration: raw.metadata.generation } : {};
  const v = enforceability(raw);
  if (v.ok)
    return {
      type: ENFORCEABLE_CONDITION,
      status: 'True',
      reason: 'Enforceable',
      message: 'flock enforces every rule as written',
      ...gen,
    };
  if (v.reason === 'DomainNamesNotEnforced')
    return {
      type: ENFORCEABLE_CONDITION,
      status: 'False',
      reason: 'DomainNamesNotEnforced',
      message: `${v.fields.join(', ')}: domainNames peers match nothing (flock does not see DNS); the rest is enforced`,
      ...gen,
    };
  return {
    type: ENFORCEABLE_CONDITION,
    status: 'False',
    reason: 'FailClosed',
    message: `${v.issues.map((i) => `${i.field}: ${i.message}`).join('; ')} — enforced fail-closed: Accept rules match nothing, Deny and Pass rules deny everything`,
    ...gen,
  };
}

/** recheckMs, retryMs: how often the CRD is looked for (@flock/kube whenServed). */
export interface ClusterPolicyStatusOptions extends Pick<
  WhenServedOptions,
  'recheckMs' | 'retryMs'
> {
  transport: KubeTransport;
  logger: Logger;
  fieldManager: string;
  metrics?: MetricsOptions;
  watchdogMs?: number;
}

type Status = { conditions?: Condition[] | null } | undefined;

export class ClusterPolicyStatus {
  private cache: Cache<KubeObject> | undefined;
  private controller: Controller | undefined;
  private leading = false;
  private stopped = false;
  private probing: { stop(): void } | undefined;

  constructor(private readonly options: ClusterPolicyStatusOptions) {}

  start(): void {
    this.probing = whenServed({
      transport: this.options.transport,
      ref: CLUSTER_NETWORK_POLICIES,
      logger: this.options.logger,
      absentMessage: 'ClusterNetworkPolicy CRD is not installed: no status to write',
      recheckMs: this.options.recheckMs,
      retryMs: this.options.retryMs,
      onServed: () => this.startCache(),
    });
  }

  /** Leadership gained or lost: the controller (the only writer) runs only while leading. */
  async setLeading(leading: boolean): Promise<void> {
    this.leading = leading;
    if (leading) this.startController();
    else await this.stopController();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    this.probing?.stop();
    await this.stopController();
    await this.cache?.stop();
  }

  private startCache(): void {
    const { transport, logger } = this.options;
    this.cache = new Cache<KubeObject>({
      source: resourceListWatch(transport, CLUSTER_NETWORK_POLICIES),
      name: 'clusternetworkpolicies',
      logger,
      ...(this.options.metrics ? { metrics: this.options.metrics } : {}),
      ...(this.options.watchdogMs ? { watchdogMs: this.options.watchdogMs } : {}),
    });
    this.cache.start();
    if (this.leading) this.startController();
  }

  private startController(): void {
    const cache = this.cache;
    if (!cache || this.controller || this.stopped) return;
    const controller = new Controller({
      name: 'clusternetworkpolicy-status',
      logger: this.options.logger,
      ...(this.options.metrics ? { metrics: this.options.metrics } : {}),
      reconcile: async (key, ctx) => {
        await cache.synced;
        const obj = cache.get(key);
        if (!obj?.metadata.name || ctx.signal.aborted) return;
        const want = enforceableCondition(obj);
        const list: Condition[] = (obj as { status?: Status }).status?.conditions ?? [];
        const have = list.find((c) => c.type === want.type);
        if (
          have &&
          have.status === want.status &&
          have.reason === want.reason &&
          have.message === want.message &&
          have.observedGeneration === want.observedGeneration
        )
          return;
        await patchStatus(
          this.options.transport,
          CLUSTER_NETWORK_POLICIES,
          obj.metadata.name,
          undefined,
          { conditions: setCondition(list, want) },
          {
            fieldManager: this.options.fieldManager,
            mode: 'merge',
            ...(obj.metadata.resourceVersion
              ? { resourceVersion: obj.metadata.resourceVersion }
              : {}),
            signal: ctx.signal,
          },
        );
      },
    });
    controller.watch(cache);
    controller.start();
    this.controller = controller;
  }

  private async stopController(): Promise<void> {
    const c = this.controller;
    this.controller = undefined;
    await c?.stop();
  }
}
