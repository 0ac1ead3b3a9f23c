// The agent's answers to the CNI plugin: ADD, DEL, CHECK, GC, STATUS. ADD is two-phase —
// a `pending` store entry before any kernel work, `committed` after — and any failure undoes
// what was done and releases the addresses, so a crash or an error never leaves an address
// held without its pod or kernel state without its entry.
import {
  CNI_VERSION,
  CniErrorCode,
  type AgentRequest,
  type AgentResponse,
  type CniResult,
  type Logger,
  type NodeConfig,
} from '@flock/api';
import {
  AllocationStoreError,
  entryKey,
  type AddressAllocator,
  type AllocationEntry,
  type AllocationStore,
} from '@flock/ipam';
import type { V1Pod } from '@kubernetes/client-node';
import { DatapathError, hostVethName, type Datapath, type PodSpec } from '../datapath/index.js';
import type { FaultHook, HandlerFaultPoint } from '../faults.js';
import { KeyedMutex } from '../keyed-mutex.js';
import { CniCommandError, errorResponse } from './errors.js';
import { addressRequest, pinnedConflict, podIdentity } from './pod-request.js';

/** The node's current configuration and address space; undefined until the agent is ready. */
export interface NodeState {
  nodeConfig: NodeConfig;
  allocator: AddressAllocator;
}

/** Where ADD finds the Pod object (the node's pod cache, falling back to the API server). */
export interface PodLookup {
  get(namespace: string, name: string, uid?: string): Promise<V1Pod | undefined>;
  /** Pods of the whole cluster whose primary address (status.podIP) is `ip`. */
  holdersOf?(ip: string): Promise<V1Pod[]>;
}

/** What other parts of the agent do around ADD and DEL. */
export interface CniHooks {
  /** After the kernel work, before commit: the new pod's NetworkPolicy must be in place. */
  beforeCommit?(entry: AllocationEntry): Promise<void>;
  /** After an allocation was committed or removed (announcements, anycast routes). */
  changed?(): void;
}

/** Tell the pod's owner about a refusal (a Kubernetes Event on the pod). */
export type PodWarning = (pod: V1Pod, reason: string, message: string) => void;

export type { FaultPoint } from '../faults.js';

export interface CniHandlerDeps {
  store: AllocationStore;
  datapath: Datapath;
  node: () => NodeState | undefined;
  pods: PodLookup;
  logger: Logger;
  hooks?: CniHooks;
  warn?: PodWarning;
  /** Test-only: called at each fault point (may throw or kill the process); see faults.ts. */
  fault?: FaultHook<HandlerFaultPoint>;
  /** STATUS readiness beyond having a NodeConfig (start-up finished). */
  ready?: () => boolean;
}

export class CniHandlers {
  private readonly mutex = new KeyedMutex();

  constructor(private readonly deps: CniHandlerDeps) {}

  /** Serve one request from the socket server. Never throws. */
  async handle(request: AgentRequest): Promise<AgentResponse> {
    try {
      switch (request.command) {
        case 'ADD':
          return { ok: true, result: await this.withContainer(request, () => this.add(request)) };
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

  private async add(request: AgentRequest): Promise<CniResult> {
    const { containerID, ifName, netns } = request as Required<AgentRequest>;
    if (!netns) throw new CniCommandError(CniErrorCode.InvalidEnvironment, 'ADD needs CNI_NETNS');
    const node = this.requireNode();
    const who = podIdentity(request.args);
    const existing = this.deps.store.get(containerID, ifName);
    if (existing?.state === 'committed') {
      // A repeated ADD: converge the kernel state and answer the same result.
      const setup = await this.setup(existing, netns);
      return this.result(setup);
    }
    if (existing) await this.undo(existing, netns);

    const pod = await this.deps.pods.get(who.namespace, who.name, who.uid);
    if (!pod?.metadata?.uid) {
      throw new CniCommandError(
        CniErrorCode.UnknownContainer,
        `pod ${who.namespace}/${who.name} not found on the API server`,
      );
    }
    if (who.uid && pod.metadata.uid !== who.uid) {
      throw new CniCommandError(
        CniErrorCode.UnknownContainer,
        `pod ${who.namespace}/${who.name} has UID ${pod.metadata.uid}, the runtime asked for ${who.uid}`,
      );
    }
    let wanted;
    try {
      wanted = addressRequest(
        pod,
        {
          annotations: node.nodeConfig.metadata.annotations,
          anycastCIDRs: node.nodeConfig.spec.anycastCIDRs,
        },
        this.deps.logger,
      );
    } catch (error) {
      if (error instanceof CniCommandError)
        this.deps.warn?.(pod, 'FlockAddressRefused', error.message);
      throw error;
    }
    if (wanted.pinned?.ipv6 && this.deps.pods.holdersOf) {
      const conflict = pinnedConflict(pod, await this.deps.pods.holdersOf(wanted.pinned.ipv6));
      if (conflict) {
        this.deps.warn?.(pod, 'FlockAddressRefused', conflict);
        throw new CniCommandError(CniErrorCode.NotAllowed, conflict);
      }
    }
    const owner = entryKey(containerID, ifName);
    const allocated = node.allocator.allocate({
      owner,
      namespace: who.namespace,
      name: who.name,
      algo: wanted.algo,
      ...(wanted.pinned ? { pinned: wanted.pinned } : {}),
    });
    if (!allocated.ok) {
      const code =
        allocated.error.code === 'Exhausted' ? CniErrorCode.Exhausted : CniErrorCode.NotAllowed;
      this.deps.warn?.(pod, 'FlockAllocationFailed', allocated.error.message);
      throw new CniCommandError(code, allocated.error.message);
    }
    const a = allocated.value;
    let entry: AllocationEntry;
    try {
      entry = await this.deps.store.putPending({
        containerID,
        ifname: ifName,
        namespace: who.namespace,
        pod: who.name,
        podUID: pod.metadata.uid,
        ip6: a.ip6,
        ...(a.ip4 ? { ip4: a.ip4 } : {}),
        pinned: a.pinned,
        anycast: wanted.anycast,
      });
    } catch (error) {
      node.allocator.release(owner);
      throw new CniCommandError(
        CniErrorCode.IoFailure,
        `allocation store: ${(error as Error).message}`,
      );
    }
    try {
      await this.deps.fault?.('after-pending');
      const setup = await this.setup(entry, netns);
      await this.deps.fault?.('after-datapath');
      await this.deps.hooks?.beforeCommit?.(entry);
      await this.deps.fault?.('after-policy');
      await this.deps.fault?.('before-commit');
      await this.deps.store.commit(containerID, ifName);
      await this.deps.fault?.('after-commit');
      this.deps.hooks?.changed?.();
      this.deps.logger.info('pod added', {
        pod: `${who.namespace}/${who.name}`,
        containerID,
        ip6: entry.ip6,
        ip4: entry.ip4,
      });
      return this.result(setup);
    } catch (error) {
      await this.undo(entry, netns).catch((e: unknown) =>
        this.deps.logger.error('cleanup after a failed ADD failed', {
          containerID,
          error: String(e),
        }),
      );
      if (error instanceof CniCommandError) throw error;
      // A full or read-only disk at commit: the kernel work was undone, the old store kept.
      if (error instanceof AllocationStoreError)
        throw new CniCommandError(CniErrorCode.IoFailure, `allocation store: ${error.message}`);
      throw new CniCommandError(
        CniErrorCode.SetupFailed,
        `ADD failed: ${(error as Error).message}`,
      );
    }
  }

  private async setup(entry: AllocationEntry, netns: string) {
    try {
      return await this.deps.datapath.setupPod(this.podSpec(entry, netns));
    } catch (error) {
      const step = error instanceof DatapathError ? error.step : 'datapath';
      throw new CniCommandError(
        CniErrorCode.SetupFailed,
        `ADD failed at step ${step}: ${(error as Error).message}`,
      );
    }
  }

  private podSpec(entry: AllocationEntry, netns: string): PodSpec {
    return {
      containerID: entry.containerID,
      ifName: entry.ifname,
      netns,
      hostVeth: hostVethName(entry.containerID, entry.ifname),
      ip6: entry.ip6,
      ...(entry.ip4 ? { ip4: entry.ip4 } : {}),
      anycast: entry.anycast,
    };
  }

  private result(setup: Awaited<ReturnType<Datapath['setupPod']>>): CniResult {
    return {
      cniVersion: CNI_VERSION,
      interfaces: setup.interfaces,
      ips: setup.ips,
      routes: setup.routes,
    };
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
  ): Promise<void> {
    if (entry.state === 'committed') {
      // No changed() here: the pod's policy rules stay until its veth is gone.
      await this.deps.store.markPending(entry.containerID, entry.ifname);
      await fault?.('del-after-mark');
    }
    await this.deps.datapath.teardownPod({
      containerID: entry.containerID,
      ifName: entry.ifname,
      hostVeth: hostVethName(entry.containerID, entry.ifname),
      ip6: entry.ip6,
      ...(entry.ip4 ? { ip4: entry.ip4 } : {}),
      anycast: entry.anycast,
      ...(netns ? { netns } : {}),
    });
    await fault?.('del-after-datapath');
    await this.deps.store.remove(entry.containerID, entry.ifname);
    await fault?.('del-after-remove');
    this.deps.node()?.allocator.release(entryKey(entry.containerID, entry.ifname));
    this.deps.hooks?.changed?.();
  }

  private async del(request: AgentRequest): Promise<void> {
    const { containerID, ifName } = request as Required<AgentRequest>;
    const entry = this.deps.store.get(containerID, ifName);
    if (entry) {
      await this.undo(entry, request.netns, this.deps.fault);
      this.deps.logger.info('pod deleted', { pod: `${entry.namespace}/${entry.pod}`, containerID });
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
    const findings = await this.deps.datapath.checkPod(this.podSpec(entry, netns));
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
