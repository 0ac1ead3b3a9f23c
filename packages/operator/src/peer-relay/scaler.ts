// The peer relay's replicas by node count (as Typha's): one replica for every `nodesPerReplica`
// nodes, at least `minReplicas` and at most `maxReplicas`, never more than there are nodes (the
// replicas take one node each); a fixed count is min = max. The leader writes the relay
// Deployment's spec.replicas (a merge patch, field manager flock-operator) when it differs: on a
// tick and when nodes come or go. The chart never sets spec.replicas, so helm's server-side
// apply never conflicts with it. A missing Deployment (the relay turned off) is nothing to do.
import {
  DEPLOYMENTS,
  Loop,
  PatchStrategy,
  isNotFound,
  objectPath,
  type Cache,
  type KubeObject,
  type KubeTransport,
  type Logger,
  type LoopMetrics,
} from '@flock/kube';
import { z } from 'zod';

export interface RelayScale {
  nodesPerReplica: number;
  minReplicas: number;
  maxReplicas: number;
}

/** The replicas `nodes` nodes want. */
export function relayReplicas(nodes: number, s: RelayScale): number {
  const wanted = Math.max(s.minReplicas, Math.ceil(nodes / s.nodesPerReplica));
  return Math.min(wanted, s.maxReplicas, nodes);
}

const DeploymentReplicas = z.looseObject({
  spec: z.looseObject({ replicas: z.int().optional() }).optional(),
});

export interface RelayScalerOptions extends RelayScale {
  transport: KubeTransport;
  nodes: Cache<KubeObject>;
  namespace: string;
  deployment: string;
  logger: Logger;
  loopMetrics?: LoopMetrics;
  periodMs?: number;
}

export class RelayScaler {
  private readonly loop: Loop;
  private off: (() => void) | undefined;

  constructor(private readonly o: RelayScalerOptions) {
    this.loop = new Loop({
      name: 'peer-relay-scale',
      sync: () => this.sync(),
      periodMs: o.periodMs ?? 60_000,
      // A burst of nodes joining is one write.
      debounceMs: 5_000,
      ...(o.loopMetrics ? { metrics: o.loopMetrics } : {}),
      onError: (error) =>
        o.logger.warn('cannot scale the peer relay', {
          deployment: o.deployment,
          error: String(error),
        }),
    });
  }

  start(): void {
    const changed = () => this.loop.trigger();
    this.off = this.o.nodes.addHandler({ onAdd: changed, onDelete: changed }, { replay: false });
    this.loop.start();
    this.loop.trigger(0);
  }

  async stop(): Promise<void> {
    this.off?.();
    await this.loop.stop();
  }

  /** Run once now (tests). */
  runOnce(): Promise<void | undefined> {
    return this.loop.run();
  }

  private async sync(): Promise<void> {
    const { transport, namespace, deployment } = this.o;
    await this.o.nodes.synced;
    const path = objectPath(DEPLOYMENTS, deployment, namespace);
    let current: number | undefined;
    try {
      current = DeploymentReplicas.parse(await transport.request({ method: 'GET', path })).spec
        ?.replicas;
    } catch (error) {
      if (isNotFound(error)) return;
      throw error;
    }
    const nodes = this.o.nodes.size;
    const replicas = relayReplicas(nodes, this.o);
    if (current === replicas) return;
    await transport.request({
      method: 'PATCH',
      path,
      query: { fieldManager: 'flock-operator' },
      contentType: PatchStrategy.MergePatch,
      body: { spec: { replicas } },
    });
    this.o.logger.info('peer relay scaled', { deployment, nodes, from: current, to: replicas });
  }
}
