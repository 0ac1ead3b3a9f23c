// This node's NodeConfig: a one-object cache, the wait for it at start-up, the node's address
// space (an allocator over cidr6/cidr4) derived from it, and the Events when it goes and comes
// back.
import { NodeConfig, type Logger } from '@flock/api';
import { AddressAllocator } from '@flock/ipam';
import {
  Cache,
  NODECONFIGS,
  type EventRecorder,
  formatFieldSelector,
  resourceListWatch,
  type KubeTransport,
  type MetricsOptions,
} from '@flock/kube';

/** The node's current configuration and address space; undefined until the agent is ready. */
export interface NodeState {
  nodeConfig: NodeConfig;
  allocator: AddressAllocator;
}

interface NodeConfigTrackerOptions {
  transport: KubeTransport;
  nodeName: string;
  logger: Logger;
  addressQuarantineMs: number;
  /** The share of a node prefix one namespace may keep quarantined (AllocatorOptions). */
  addressQuarantineShare?: number;
  /** Restart a watch silent for this long (default: the cache's). */
  watchdogMs?: number;
  /** The agent's registry (cache metrics). */
  metrics?: MetricsOptions;
  /** Called after the NodeConfig was created, changed or deleted. */
  onChange?: (nodeConfig: NodeConfig | undefined) => void;
  /**
   * Does this allocation owner still hold its addresses (an entry in the allocation store)?
   * Asked when a NodeConfig comes back after it was gone: a pod deleted meanwhile could not
   * release its address. Default (and when it throws): yes.
   */
  held?: (owner: string) => boolean;
}

export class NodeConfigTracker {
  readonly cache: Cache<NodeConfig>;
  private state: NodeState | undefined;
  /**
   * The state before the NodeConfig went away: its allocator still holds the addresses of the
   * pods running here, which a re-created NodeConfig must not hand out a second time.
   */
  private retired: NodeState | undefined;

  constructor(private readonly options: NodeConfigTrackerOptions) {
    this.cache = new Cache<NodeConfig>({
      source: resourceListWatch(options.transport, NODECONFIGS),
      schema: NodeConfig,
      fieldSelector: formatFieldSelector({ 'metadata.name': options.nodeName }),
      logger: options.logger,
      name: 'nodeconfig',
      ...(options.metrics ? { metrics: options.metrics } : {}),
      ...(options.watchdogMs ? { watchdogMs: options.watchdogMs } : {}),
    });
    const changed = () => {
      this.refresh();
      options.onChange?.(this.state?.nodeConfig);
    };
    this.cache.addHandler({ onAdd: changed, onUpdate: changed, onDelete: changed });
  }

  start(): void {
    this.cache.start();
  }

  async stop(): Promise<void> {
    await this.cache.stop();
  }

  /** The node's state, or undefined while there is no (valid) NodeConfig. */
  current(): NodeState | undefined {
    return this.state;
  }

  /** Wait (bounded) for the NodeConfig, logging while waiting; throws after the bound. */
  async waitForNodeConfig(timeoutMs: number, logEveryMs = 10_000): Promise<NodeState> {
    const deadline = Date.now() + timeoutMs;
    let nextLog = 0;
    for (;;) {
      if (this.state) return this.state;
      const now = Date.now();
      if (now >= deadline) {
        throw new Error(
          `no NodeConfig ${this.options.nodeName} after ${Math.round(timeoutMs / 1000)} s: is the flock operator running, and does a Pool select this node?`,
        );
      }
      if (now >= nextLog) {
        this.options.logger.info(
          "waiting for this node's NodeConfig (written by the flock operator once a Pool selects the node)",
          { node: this.options.nodeName },
        );
        nextLog = now + logEveryMs;
      }
      await new Promise((r) => setTimeout(r, 200));
    }
  }

  /** Rebuild the allocator only when the address space changed; keep allocations otherwise. */
  private refresh(): void {
    const nc = this.cache.getObject(this.options.nodeName);
    if (!nc) {
      if (this.state)
        this.options.logger.warn(
          'NodeConfig of this node is gone: new pods wait until it is back',
          { node: this.options.nodeName },
        );
      this.retired = this.state ?? this.retired;
      this.state = undefined;
      return;
    }
    const prev = this.state ?? this.retired;
    const back = this.state ? undefined : this.retired;
    if (back) this.releaseGone(back.allocator);
    this.retired = undefined;
    const same =
      prev &&
      prev.nodeConfig.spec.cidr6 === nc.spec.cidr6 &&
      prev.nodeConfig.spec.cidr4 === nc.spec.cidr4 &&
      JSON.stringify(prev.nodeConfig.spec.pinnedCIDRs ?? []) ===
        JSON.stringify(nc.spec.pinnedCIDRs ?? []);
    if (prev && same) {
      this.state = { nodeConfig: nc, allocator: prev.allocator };
      if (back)
        this.options.logger.info('NodeConfig of this node is back: serving new pods again', {
          node: this.options.nodeName,
        });
      return;
    }
    const created = AddressAllocator.create({
      cidr6: nc.spec.cidr6,
      ...(nc.spec.cidr4 ? { cidr4: nc.spec.cidr4 } : {}),
      pinnedCIDRs: nc.spec.pinnedCIDRs ?? [],
      quarantineMs: this.options.addressQuarantineMs,
      ...(this.options.addressQuarantineShare === undefined
        ? {}
        : { quarantineShare: this.options.addressQuarantineShare }),
    });
    if (!created.ok) {
      this.options.logger.error('NodeConfig cannot be used', {
        node: this.options.nodeName,
        error: created.error,
      });
      this.retired = prev;
      this.state = undefined;
      return;
    }
    // Carry the existing allocations over (a re-created NodeConfig with the same prefixes).
    for (const a of prev?.allocator.allocations() ?? []) created.value.markAllocated(a);
    this.state = { nodeConfig: nc, allocator: created.value };
    this.options.logger.info('NodeConfig loaded', {
      node: this.options.nodeName,
      cidr6: nc.spec.cidr6,
      cidr4: nc.spec.cidr4,
    });
  }

  /** Release what pods deleted while the NodeConfig was gone still hold in the allocator. */
  private releaseGone(allocator: NodeState['allocator']): void {
    const held = this.options.held;
    if (!held) return;
    for (const a of allocator.allocations()) {
      let still = true;
      try {
        still = held(a.owner);
      } catch {
        // Unknown: keep it (a leaked address is better than one handed out twice).
      }
      if (!still) allocator.release(a.owner);
    }
  }
}

/** Events on the Node when its NodeConfig goes away (new pods fail meanwhile) and comes back. */
export function nodeConfigEvents(events: Pick<EventRecorder, 'event'>, nodeName: string) {
  const node = { apiVersion: 'v1', kind: 'Node', metadata: { name: nodeName } };
  let had = false;
  let seen = false;
  return (nc: unknown) => {
    const has = nc !== undefined;
    if (had && !has)
      void events.event(node, {
        type: 'Warning',
        reason: 'NodeConfigMissing',
        action: 'WaitForNodeConfig',
        note: `NodeConfig ${nodeName} is gone or unusable: new pods on this node fail (CNI code 11) until it is back; running pods keep their addresses`,
      });
    if (!had && has && seen)
      void events.event(node, {
        type: 'Normal',
        reason: 'NodeConfigRestored',
        action: 'WaitForNodeConfig',
        note: `NodeConfig ${nodeName} is back: serving new pods again`,
      });
    seen ||= has;
    had = has;
  };
}
