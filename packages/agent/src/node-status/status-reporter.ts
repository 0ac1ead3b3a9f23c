// Writes this node's NodeConfig status (status subresource, server-side apply as field manager
// flock-agent) — only when it differs from what the agent last wrote or found there. The
// NetworkPolicy side reports through setPolicy(); everything else comes from the inputs (the
// routing side, the store: status-inputs.ts). One Loop, the writer (nodeconfig-status:
// debounced, a failed write retried with backoff), triggered by refresh().
import { AGENT_FIELD_MANAGER, type Condition, type Logger, type NodeConfig } from '@flock/api';
import { Loop, NODECONFIGS, patchStatus, type KubeTransport, type LoopMetrics } from '@flock/kube';
import type { Component } from '../core/lifecycle.js';
import {
  bgpPeerStatuses,
  computeNodeStatus,
  stableJson,
  type PeerStatus,
  type PolicyReport,
  type StatusInputs,
} from './status-compute.js';

interface NodeStatusReporterDeps {
  transport: KubeTransport;
  nodeName: string;
  logger: Logger;
  /** The NodeConfig object as the cache holds it (with its current status). */
  nodeConfig: () => NodeConfig | undefined;
  /** Everything but the policy report; undefined: nothing to report yet. */
  inputs: () => Omit<StatusInputs, 'policy'> | undefined;
  /** Coalesce bursts of changes into one write (default 300 ms). */
  debounceMs?: number;
  now?: () => Date;
  /** Count and time the status writes (loop nodeconfig-status). */
  loops?: LoopMetrics;
}

export class NodeStatusReporter implements Component {
  readonly name = 'NodeConfig status';
  private policy: PolicyReport | undefined;
  /** What was last written (or found on the object), and the object's UID at the time. */
  private last: { uid: string | undefined; json: string; conditions: Condition[] } | undefined;
  private readonly writer: Loop;
  private started = false;
  private writes = 0;

  constructor(private readonly deps: NodeStatusReporterDeps) {
    this.writer = new Loop({
      name: 'nodeconfig-status',
      sync: () => this.write(),
      debounceMs: deps.debounceMs ?? 300,
      onError: (error) =>
        deps.logger.warn('could not write NodeConfig status; retrying', { error: String(error) }),
      ...(deps.loops ? { metrics: deps.loops } : {}),
    });
  }

  /** PolicyApplied: the NetworkPolicy engine's last result (any time, also before start()). */
  setPolicy(report: PolicyReport): void {
    this.policy = { ...report };
    this.refresh();
  }

  /** Each configured peer as BIRD last reported it (empty before the NodeConfig is known). */
  peerStatuses(): PeerStatus[] {
    const inputs = this.deps.inputs();
    return inputs ? bgpPeerStatuses(inputs) : [];
  }

  /** Status writes so far (for tests and metrics). */
  get writeCount(): number {
    return this.writes;
  }

  start(): void {
    if (this.started) return;
    this.started = true;
  }

  /** Recompute and write if changed, after the debounce. */
  refresh(): void {
    if (this.started) this.writer.trigger();
  }

  /** Recompute and write now; resolves when done. */
  flush(): Promise<void> {
    return this.writer.run().then(
      () => undefined,
      () => undefined, // logged, and retried
    );
  }

  async stop(): Promise<void> {
    await this.writer.stop();
  }

  private async write(): Promise<void> {
    const inputs = this.deps.inputs();
    const object = this.deps.nodeConfig();
    if (!inputs || !object) return;
    const uid = object.metadata.uid;
    if (!this.last || this.last.uid !== uid) {
      // First write, or the NodeConfig was re-created: start from what the object holds.
      const found = object.status ?? {};
      this.last = { uid, json: stableJson(found), conditions: found.conditions ?? [] };
    }
    const status = computeNodeStatus(
      { ...inputs, ...(this.policy ? { policy: this.policy } : {}) },
      this.last.conditions,
      this.deps.now?.() ?? new Date(),
    );
    const json = stableJson(status);
    if (json === this.last.json) return;
    await patchStatus(this.deps.transport, NODECONFIGS, this.deps.nodeName, undefined, status, {
      fieldManager: AGENT_FIELD_MANAGER,
    });
    this.writes++;
    this.last = { uid, json, conditions: status.conditions ?? [] };
    this.deps.logger.debug('NodeConfig status written', { node: this.deps.nodeName });
  }
}
