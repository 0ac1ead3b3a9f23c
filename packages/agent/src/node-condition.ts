// Keep the Node's NetworkUnavailable condition False (reason FlockReady) while the agent runs:
// written when the Node's cache shows it otherwise (at start-up, when someone else changes it)
// and re-checked periodically — a write only when the condition is not already False/FlockReady,
// keeping its lastTransitionTime when it was False already.
import { NETWORK_UNAVAILABLE_REASON, type Logger } from '@flock/api';
import {
  Cache,
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
  private readonly cache: Cache<V1Node & KubeObject>;
  private timer: NodeJS.Timeout | undefined;
  private inFlight: Promise<void> | undefined;

  constructor(
    private readonly transport: KubeTransport,
    private readonly nodeName: string,
    private readonly logger: Logger,
    private readonly periodMs: number,
    watchdogMs?: number,
    private readonly metrics?: { options: MetricsOptions; loops: LoopMetrics },
  ) {
    this.cache = new Cache<V1Node & KubeObject>({
      source: resourceListWatch(transport, NODES),
      fieldSelector: formatFieldSelector({ 'metadata.name': nodeName }),
      logger,
      name: 'node',
      ...(metrics ? { metrics: metrics.options } : {}),
      ...(watchdogMs ? { watchdogMs } : {}),
    });
    const check = (node: V1Node) => {
      if (!isAsserted(node)) void this.assert(node);
    };
    this.cache.addHandler({ onAdd: check, onUpdate: (_old, node) => check(node) });
  }

  start(): void {
    this.cache.start();
    this.timer = setInterval(() => void this.resync(), this.periodMs);
  }

  async stop(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    await this.cache.stop();
    await this.inFlight;
  }

  /**
   * The periodic check: nothing to do while the cache shows the condition set; without a
   * synced cache (the API server was away) the condition is written blind.
   */
  resync(): Promise<void> {
    const node = this.cache.hasSynced ? this.cache.getObject(this.nodeName) : undefined;
    if (node && isAsserted(node)) return Promise.resolve();
    return this.assert(node);
  }

  /**
   * Patch the condition (one write at a time; errors are logged and retried on the next tick).
   * `node`: the Node as last seen, whose condition keeps its transition time if already False.
   */
  assert(node?: V1Node): Promise<void> {
    if (this.inFlight) return this.inFlight;
    const now = seconds(new Date());
    const previous = node && networkUnavailable(node);
    // Already False (another reason): the status does not change, nor does its transition time.
    const since =
      previous?.status === 'False' && previous.lastTransitionTime
        ? seconds(new Date(previous.lastTransitionTime))
        : now;
    const request = () =>
      this.transport.request({
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
    this.metrics?.loops.declare(LOOP);
    this.inFlight = (this.metrics ? this.metrics.loops.run(LOOP, request) : request())
      .then(
        () => undefined,
        (error: unknown) =>
          this.logger.warn('could not set NetworkUnavailable=False on the Node', {
            error: String(error),
          }),
      )
      .finally(() => {
        this.inFlight = undefined;
      });
    return this.inFlight;
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
