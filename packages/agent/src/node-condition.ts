// Keep the Node's NetworkUnavailable condition False (reason FlockReady) while the agent runs:
// set at start-up, re-asserted periodically and whenever someone else changes it.
import { NETWORK_UNAVAILABLE_REASON, type Logger } from '@flock/api';
import {
  Cache,
  NODES,
  formatFieldSelector,
  objectPath,
  resourceListWatch,
  type KubeObject,
  type KubeTransport,
} from '@flock/kube';
import type { V1Node } from '@kubernetes/client-node';

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
  ) {
    this.cache = new Cache<V1Node & KubeObject>({
      source: resourceListWatch(transport, NODES),
      fieldSelector: formatFieldSelector({ 'metadata.name': nodeName }),
      logger,
      ...(watchdogMs ? { watchdogMs } : {}),
    });
    const check = (node: V1Node) => {
      if (!isAsserted(node)) void this.assert();
    };
    this.cache.addHandler({ onAdd: check, onUpdate: (_old, node) => check(node) });
  }

  start(): void {
    this.cache.start();
    void this.assert();
    this.timer = setInterval(() => void this.assert(), this.periodMs);
  }

  async stop(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    await this.cache.stop();
    await this.inFlight;
  }

  /** Patch the condition (one write at a time; errors are logged and retried on the next tick). */
  assert(): Promise<void> {
    if (this.inFlight) return this.inFlight;
    const now = new Date().toISOString().replace(/\.\d{3}Z$/, 'Z');
    this.inFlight = this.transport
      .request({
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
                lastTransitionTime: now,
                lastHeartbeatTime: now,
              },
            ],
          },
        },
      })
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

function isAsserted(node: V1Node): boolean {
  const c = node.status?.conditions?.find((x) => x.type === 'NetworkUnavailable');
  return c?.status === 'False' && c.reason === NETWORK_UNAVAILABLE_REASON;
}
