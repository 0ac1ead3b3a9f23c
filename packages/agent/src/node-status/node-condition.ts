// Keep the Node's NetworkUnavailable condition False (reason FlockReady) while the agent runs:
// written when the Node's cache shows it otherwise (at start-up, when someone else changes it)
// and re-checked periodically — a write only when the condition is not already False/FlockReady,
// keeping its lastTransitionTime when it was False already. One Loop (node-condition): triggered
// by the cache, ticking every period, a failed write retried with backoff. The cache, a watch of
// only this Node, is also where routing reads the Node's addresses (router ID, BFD sources).
import { NETWORK_UNAVAILABLE_REASON, type Logger } from '@flock/api';
import {
  Cache,
  Loop,
  NODES,
  formatFieldSelector,
  objectPath,
  resourceListWatch,
  type KubeObject,
  type KubeTransport,
  type LoopMetrics,
  type MetricsOptions,
} from '@flock/kube';
import type { V1Node } from '@kubernetes/client-node';

const LOOP = 'node-condition';

const STRATEGIC_MERGE = 'application/strategic-merge-patch+json';

export class NetworkConditionKeeper {
  readonly name = 'keep NetworkUnavailable=False';
  /** This Node, as the watch of that one object keeps it (routing reads its addresses here). */
  readonly node: Cache<V1Node & KubeObject>;
  private readonly loop: Loop;
  /** The Node as the event that asked for a write showed it. */
  private seen: V1Node | undefined;

  constructor(
    private readonly transport: KubeTransport,
    private readonly nodeName: string,
    logger: Logger,
    periodMs: number,
    watchdogMs?: number,
    metrics?: { options: MetricsOptions; loops: LoopMetrics },
  ) {
    this.node = new Cache<V1Node & KubeObject>({
      source: resourceListWatch(transport, NODES),
      fieldSelector: formatFieldSelector({ 'metadata.name': nodeName }),
      logger,
      name: 'node',
      ...(metrics ? { metrics: metrics.options } : {}),
      ...(watchdogMs ? { watchdogMs } : {}),
    });
    this.loop = new Loop({
      name: LOOP,
      sync: () => this.sync(),
      periodMs,
      backoff: { baseMs: 1000, maxMs: Math.max(1000, periodMs), jitter: 0.2 },
      ...(metrics ? { metrics: metrics.loops } : {}),
      onError: (error) =>
        logger.warn('could not set NetworkUnavailable=False on the Node', {
          error: String(error),
        }),
    });
    const check = (node: V1Node) => {
      if (isAsserted(node)) return;
      this.seen = node;
      this.loop.trigger();
    };
    this.node.addHandler({ onAdd: check, onUpdate: (_old, node) => check(node) });
  }

  start(): void {
    this.node.start();
    this.loop.start();
  }

  async stop(): Promise<void> {
    await this.node.stop();
    await this.loop.stop();
  }

  /**
   * Nothing to do while the cache shows the condition set; without a synced cache (the API
   * server was away) the condition is written blind.
   */
  private async sync(): Promise<void> {
    const seen = this.seen;
    this.seen = undefined;
    const node = seen ?? (this.node.hasSynced ? this.node.getObject(this.nodeName) : undefined);
    if (node && isAsserted(node)) return;
    const now = seconds(new Date());
    const previous = node && networkUnavailable(node);
    // Already False (another reason): the status does not change, nor does its transition time.
    const since =
      previous?.status === 'False' && previous.lastTransitionTime
        ? seconds(new Date(previous.lastTransitionTime))
        : now;
    await this.transport.request({
      method: 'PATCH',
      path: objectPath(NODES, this.nodeName, undefined, 'status'),
      contentType: STRATEGIC_MERGE,
      body: {
        status: {
          conditions: [
            {
              type: 'NetworkUnavailable',
              status: 'False',
              reason: NETWORK_UNAVAILABLE_REASON,
              message: 'flock agent is running on this node',
              lastTransitionTime: since,
              lastHeartbeatTime: now,
            },
          ],
        },
      },
    });
  }
}

/** RFC 3339 to the second, as the API server writes condition times. */
const seconds = (d: Date) => d.toISOString().replace(/\.\d{3}Z$/, 'Z');

const networkUnavailable = (node: V1Node) =>
  node.status?.conditions?.find((x) => x.type === 'NetworkUnavailable');

function isAsserted(node: V1Node): boolean {
  const c = networkUnavailable(node);
  return c?.status === 'False' && c.reason === NETWORK_UNAVAILABLE_REASON;
}
