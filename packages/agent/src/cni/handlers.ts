// The agent's answers to the CNI plugin: ADD (add.ts), DEL, CHECK, GC, STATUS, one container
// at a time. DEL is two-phase like ADD: the entry goes back to `pending` before any teardown.
import { CniErrorCode, type AgentRequest, type AgentResponse } from '@flock/api';
import { DEFAULT_ADDRESS_QUARANTINE_MS, steadyNow } from '@flock/ipam';
import { entryKey, releasedAddresses, type AllocationEntry } from '../store/index.js';
import { hostVethName } from '../datapath/index.js';
import type { FaultHook, HandlerFaultPoint } from '../core/faults.js';
import { KeyedMutex } from '../core/keyed-mutex.js';
import { add } from './add.js';
import type { NodeState } from '../node/node-config.js';
import type { CniHandlerDeps } from './deps.js';
import { CniCommandError, errorResponse } from '../core/cni-error.js';
import { PhaseTimer } from './phases.js';
import { podSpec } from './pod-spec.js';

export type { CniHandlerDeps, CniHooks, PodWarning } from './deps.js';
export type { FaultPoint } from '../core/faults.js';

export class CniHandlers {
  private readonly mutex = new KeyedMutex();

  constructor(private readonly deps: CniHandlerDeps) {}

  /** Serve one request from the socket server. Never throws. */
  async handle(request: AgentRequest): Promise<AgentResponse> {
    try {
      switch (request.command) {
        case 'ADD':
          return {
            ok: true,
            result: await this.withContainer(request, () =>
              add(
                this.deps,
                () => this.requireNode(),
                request,
                (e, netns) => this.undo(e, netns),
              ),
            ),
          };
        case 'DEL':
          await this.withContainer(request, () => this.del(request));
          return { ok: true };
        case 'CHECK':
          await this.withContainer(request, () => this.check(request));
          return { ok: true };
        case 'GC':
          await this.gc(request);
          return { ok: true };
        case 'STATUS':
          return this.status();
      }
    } catch (error) {
      const response = errorResponse(error);
      this.deps.logger.warn('CNI command failed', {
        command: request.command,
        containerID: request.containerID,
        error: response.ok ? undefined : response.error,
      });
      return response;
    }
  }

  status(): AgentResponse {
    if (!this.deps.node() || !(this.deps.ready?.() ?? true)) {
      return {
        ok: false,
        error: {
          code: CniErrorCode.PluginNotAvailable,
          msg: 'flock agent is not ready: it has no NodeConfig for this node yet or is still starting',
        },
      };
    }
    return { ok: true };
  }

  private withContainer<T>(request: AgentRequest, work: () => Promise<T>): Promise<T> {
    if (!request.containerID || !request.ifName) {
      throw new CniCommandError(
        CniErrorCode.InvalidEnvironment,
        `${request.command} needs CNI_CONTAINERID and CNI_IFNAME`,
      );
    }
    return this.mutex.run(entryKey(request.containerID, request.ifName), work);
  }

  private requireNode(): NodeState {
    const node = this.deps.node();
    if (!node) {
      throw new CniCommandError(
        CniErrorCode.TryAgainLater,
        'flock agent is not ready: no NodeConfig for this node yet',
      );
    }
    return node;
  }

  /**
   * Tear down an allocation found stale elsewhere (the orphan sweep), under the container's
   * lock, and only if the store still holds that very entry: a concurrent ADD or DEL of the
   * same container wins. Returns whether it removed anything.
   */
  undoIfUnchanged(entry: AllocationEntry): Promise<boolean> {
    return this.mutex.run(entryKey(entry.containerID, entry.ifname), async () => {
      const current = this.deps.store.get(entry.containerID, entry.ifname);
      if (!current || current.state !== entry.state || current.createdAt !== entry.createdAt)
        return false;
      await this.undo(current);
      return true;
    });
  }

  /**
   * Remove an entry's kernel state, the entry, and its addresses (idempotent). Two-phase like
   * ADD: a committed entry is marked pending first, so a crash during the teardown leaves an
   * entry the next start drops, never a committed entry without its kernel state. `fault` is
   * the test-only hook, passed by DEL alone (start-up and the sweeps never stop at DEL points).
   */
  async undo(
    entry: AllocationEntry,
    netns?: string,
    fault?: FaultHook<HandlerFaultPoint>,
    time?: PhaseTimer,
  ): Promise<void> {
    const allocator = this.deps.node()?.allocator;
    if (entry.state === 'committed') {
      // No changed() here: the pod's policy rules stay until its veth is gone. The addresses'
      // quarantine is written with this first step: a crash or a restart from here on must
      // not hand them out early. (A pending ADD's addresses were never the pod's: no record.)
      const until = steadyNow() + (allocator?.quarantineMs ?? DEFAULT_ADDRESS_QUARANTINE_MS);
      await this.deps.store.markPending(
        entry.containerID,
        entry.ifname,
        releasedAddresses(entry, until),
      );
      time?.mark('mark');
      await fault?.('del-after-mark');
    }
    const hostVeth = hostVethName(entry.containerID, entry.ifname);
    await this.deps.datapath.teardownPod({
      containerID: entry.containerID,
      ifName: entry.ifname,
      hostVeth,
      ip6: entry.ip6,
      ...(entry.ip4 ? { ip4: entry.ip4 } : {}),
      anycast: entry.anycast,
      ...(netns ? { netns } : {}),
      // Every flock veth has a store entry (pending before any kernel change) and addresses are
      // unique in the store: unless another entry's veth name collides, the veth is this pod's.
      exclusive: !this.deps.store
        .entries()
        .some(
          (e) =>
            (e.containerID !== entry.containerID || e.ifname !== entry.ifname) &&
            hostVethName(e.containerID, e.ifname) === hostVeth,
        ),
    });
    time?.mark('datapath');
    await fault?.('del-after-datapath');
    await this.deps.store.remove(entry.containerID, entry.ifname);
    time?.mark('remove');
    await fault?.('del-after-remove');
    // A pending ADD's addresses never reached the runtime: no pod used them, no quarantine.
    allocator?.release(entryKey(entry.containerID, entry.ifname), {
      used: entry.state === 'committed' || entry.removing === true,
    });
    this.deps.hooks?.changed?.();
  }

  private async del(request: AgentRequest): Promise<void> {
    const { containerID, ifName } = request as Required<AgentRequest>;
    const entry = this.deps.store.get(containerID, ifName);
    if (entry) {
      const time = new PhaseTimer();
      await this.undo(entry, request.netns, this.deps.fault, time);
      this.deps.logger.info('pod deleted', {
        pod: `${entry.namespace}/${entry.pod}`,
        containerID,
        ms: time.done(),
      });
      return;
    }
    // Unknown container: clean whatever kernel state its name would have, then succeed.
    await this.deps.datapath.teardownPod({
      containerID,
      ifName,
      hostVeth: hostVethName(containerID, ifName),
      ...(request.netns ? { netns: request.netns } : {}),
    });
  }

  private async check(request: AgentRequest): Promise<void> {
    const { containerID, ifName, netns } = request as Required<AgentRequest>;
    const entry = this.deps.store.get(containerID, ifName);
    if (!entry || entry.state !== 'committed') {
      throw new CniCommandError(
        CniErrorCode.UnknownContainer,
        `container ${containerID} interface ${ifName} is not known to flock`,
      );
    }
    if (!netns) throw new CniCommandError(CniErrorCode.InvalidEnvironment, 'CHECK needs CNI_NETNS');
    const findings = await this.deps.datapath.checkPod(podSpec(entry, netns));
    if (findings.length) {
      throw new CniCommandError(
        CniErrorCode.SetupFailed,
        `CHECK found ${findings.length} difference(s): ${findings.map((f) => f.message).join('; ')}`,
      );
    }
  }

  private async gc(request: AgentRequest): Promise<void> {
    const valid = new Set(
      (request.config['cni.dev/valid-attachments'] ?? []).map((a) =>
        entryKey(a.containerID, a.ifname),
      ),
    );
    for (const entry of this.deps.store.entries()) {
      const key = entryKey(entry.containerID, entry.ifname);
      if (valid.has(key)) continue;
      await this.mutex.run(key, async () => {
        const current = this.deps.store.get(entry.containerID, entry.ifname);
        if (current) await this.undo(current);
      });
      this.deps.logger.info('GC removed an attachment the runtime no longer has', {
        containerID: entry.containerID,
        ifName: entry.ifname,
      });
    }
    // Veths without any store entry (left by a crash before the pending write was durable).
    const known = new Set(
      this.deps.store.entries().map((e) => hostVethName(e.containerID, e.ifname)),
    );
    for (const veth of await this.deps.datapath.listPodVeths()) {
      if (!known.has(veth.name)) await this.removeStrayVeth(veth.name);
    }
  }

  async removeStrayVeth(name: string): Promise<void> {
    if (await this.deps.datapath.deleteStrayVeth(name)) {
      this.deps.logger.info('removed a flock veth without an allocation', { hostVeth: name });
    }
  }
}
