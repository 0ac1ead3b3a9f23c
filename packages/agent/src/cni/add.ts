// CNI ADD. Two-phase: a `pending` store entry before any kernel work, `committed` after the
// datapath and the pod's NetworkPolicy are in place; any failure undoes what was done and
// releases the addresses, so a crash or an error never leaves an address held without its pod
// or kernel state without its entry.
import {
  BGP_COMMUNITIES_ANNOTATION,
  CniErrorCode,
  NODE_DAEMON_PORTS,
  servableHostPorts,
  type AgentRequest,
  type CniResult,
  type HostPort,
  type Pod,
} from '@flock/api';
import { canonicalAddress } from '@flock/ipam';
import { checkGrants, claimFloating, type FloatingRequest } from '../claims/acquire.js';
import { allowedCommunities } from '../claims/grants.js';
import { podClaimKey } from '../claims/keys.js';
import { AllocationStoreError, entryKey, type AllocationEntry } from '../store/index.js';
import type { NodeState } from '../node/node-config.js';
import type { CniHandlerDeps } from './deps.js';
import { CniCommandError } from '../core/cni-error.js';
import { PhaseTimer, timed } from './phases.js';
import {
  addressRequest,
  communityRequest,
  hostPortRequest,
  ipv4Annotation,
  ipv4Wanted,
  podIdentity,
  type AddressRequest,
} from './pod-request.js';
import { cniResult, setupPod, type PodSetup } from './pod-spec.js';

/** Removes an entry's kernel state, the entry and its addresses (CniHandlers.undo). */
type Undo = (entry: AllocationEntry, netns?: string) => Promise<void>;

export async function add(
  deps: CniHandlerDeps,
  requireNode: () => NodeState,
  request: AgentRequest,
  undo: Undo,
): Promise<CniResult> {
  const { containerID, ifName, netns } = request as Required<AgentRequest>;
  if (!netns) throw new CniCommandError(CniErrorCode.InvalidEnvironment, 'ADD needs CNI_NETNS');
  const node = requireNode();
  const time = new PhaseTimer();
  const who = podIdentity(request.args);
  const existing = deps.store.get(containerID, ifName);
  if (existing?.state === 'committed') {
    // A repeated ADD: converge the kernel state and answer the same result.
    return cniResult(await setupPod(deps.datapath, existing, netns));
  }
  if (existing) await undo(existing, netns);

  const pod = await deps.pods.get(who.namespace, who.name, who.uid);
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
  // A refusal of what the pod asks for is also told to its owner: an Event on the pod. (Waiting
  // for a holder to withdraw is no refusal: the runtime retries the ADD.)
  const told = (reason: string, error: unknown): never => {
    if (error instanceof CniCommandError && error.code !== CniErrorCode.TryAgainLater)
      deps.warn?.(pod, reason, error.message);
    throw error;
  };
  const refusing = <T>(reason: string, check: () => T): T => {
    try {
      return check();
    } catch (error) {
      return told(reason, error);
    }
  };
  const { spec } = node.nodeConfig;
  const wanted = refusing('FlockAddressRefused', () =>
    addressRequest(
      pod,
      { annotations: node.nodeConfig.metadata.annotations, anycastCIDRs: spec.anycastCIDRs },
      deps.logger,
    ),
  );
  const floating: FloatingRequest = {
    namespace: who.namespace,
    pod: who.name,
    uid: pod.metadata.uid,
    key: refusing('FlockAddressRefused', () => podClaimKey(pod)),
    pinned: [wanted.pinned?.ipv6, wanted.pinned?.ipv4].flatMap((ip) =>
      ip === undefined ? [] : [canonicalAddress(ip) ?? ip],
    ),
    anycast: wanted.anycast,
  };
  const ipv4 = refusing('FlockAddressRefused', () => ipv4Annotation(pod));
  const asksGranted =
    floating.pinned.length > 0 ||
    floating.anycast.length > 0 ||
    pod.metadata.annotations?.[BGP_COMMUNITIES_ANNOTATION] !== undefined ||
    (ipv4 === 'public' && spec.ipv4?.assign === 'OnRequest');
  // Grants select namespaces by label: read only when the pod asks for what they govern.
  const namespace = asksGranted
    ? await deps.claims.namespace(who.namespace)
    : { name: who.namespace, labels: {} };
  refusing('FlockAddressRefused', () => checkGrants(spec, namespace, floating));
  const ipv4Carved = refusing('FlockAddressRefused', () => ipv4Wanted(pod, ipv4, spec, namespace));
  const communities = refusing('FlockCommunityRefused', () =>
    communityRequest(pod, allowedCommunities(spec, namespace)),
  );
  const hostPorts = refusing('FlockHostPortRefused', () =>
    hostPortRequest(request.config, deps.reservedHostPorts ?? NODE_DAEMON_PORTS),
  );
  // The keeper leaves these addresses to this ADD until it ends (committed or undone).
  const done = deps.claims.keeper.hold([...floating.pinned, ...floating.anycast]);
  try {
    await claimFloating(deps.claims.book, floating).catch((e: unknown) =>
      told('FlockAddressRefused', e),
    );
    return await attach(
      deps,
      node,
      request,
      { pod, wanted, communities, floating, hostPorts, ipv4: ipv4Carved },
      undo,
      time,
    );
  } finally {
    done();
  }
}

/** The pod's addresses allocated, the entry pending, wired and admitted, then committed. */
async function attach(
  deps: CniHandlerDeps,
  node: NodeState,
  request: AgentRequest,
  asked: {
    pod: Pod;
    wanted: AddressRequest;
    communities: string[];
    floating: FloatingRequest;
    hostPorts: HostPort[];
    /** An IPv4 address from the node's slice (ipv4Wanted). */
    ipv4: boolean;
  },
  undo: Undo,
  time: PhaseTimer,
): Promise<CniResult> {
  const { containerID, ifName, netns } = request as Required<AgentRequest>;
  const who = podIdentity(request.args);
  const { pod, wanted, communities } = asked;
  const owner = entryKey(containerID, ifName);
  const allocated = node.allocator.allocate({
    owner,
    namespace: who.namespace,
    name: who.name,
    algo: wanted.algo,
    ipv4: asked.ipv4,
    ...(wanted.pinned ? { pinned: wanted.pinned } : {}),
  });
  if (!allocated.ok) {
    if (allocated.error.code === 'PinnedInUse') throw pinnedInUse(deps, pod, asked.floating);
    const code =
      allocated.error.code === 'Exhausted' ? CniErrorCode.Exhausted : CniErrorCode.NotAllowed;
    deps.warn?.(pod, 'FlockAllocationFailed', allocated.error.message);
    throw new CniCommandError(code, allocated.error.message);
  }
  time.mark('lookup');
  const a = allocated.value;
  // A hostPort reaches the pod within its family: what the pod's addresses cannot serve is refused.
  const served = servableHostPorts(asked.hostPorts, a.ip4 ? [6, 4] : [6]);
  if (!served.ok) {
    node.allocator.release(owner, { used: false });
    deps.warn?.(pod, 'FlockHostPortRefused', served.error);
    throw new CniCommandError(CniErrorCode.NotAllowed, served.error);
  }
  const hostPorts = served.value;
  let entry: AllocationEntry;
  try {
    entry = await deps.store.putPending({
      containerID,
      ifname: ifName,
      namespace: who.namespace,
      pod: who.name,
      podUID: asked.floating.uid,
      ip6: a.ip6,
      ...(a.ip4 ? { ip4: a.ip4 } : {}),
      pinned: a.pinned,
      anycast: wanted.anycast,
      ...(communities.length ? { communities } : {}),
      claimKey: asked.floating.key,
      ...(hostPorts.length ? { hostPorts } : {}),
    });
  } catch (error) {
    node.allocator.release(owner, { used: false }); // the store never recorded them
    if (error instanceof AllocationStoreError && error.code === 'Conflict') {
      deps.warn?.(pod, 'FlockHostPortRefused', error.message);
      throw new CniCommandError(CniErrorCode.NotAllowed, error.message);
    }
    throw new CniCommandError(
      CniErrorCode.IoFailure,
      `allocation store: ${(error as Error).message}`,
    );
  }
  time.mark('pending');
  try {
    await deps.fault?.('after-pending');
    const setup = await wireAndAdmit(deps, entry, netns, time);
    await deps.fault?.('before-commit');
    await deps.store.commit(containerID, ifName);
    time.mark('commit');
    await deps.fault?.('after-commit');
    deps.hooks?.changed?.();
    deps.logger.info('pod added', {
      pod: `${who.namespace}/${who.name}`,
      containerID,
      ip6: entry.ip6,
      ip4: entry.ip4,
      ms: time.done(),
    });
    return cniResult(setup);
  } catch (error) {
    await undo(entry, netns).catch((e: unknown) =>
      deps.logger.error('cleanup after a failed ADD failed', { containerID, error: String(e) }),
    );
    if (error instanceof CniCommandError) throw error;
    // A full or read-only disk at commit: the kernel work was undone, the old store kept.
    if (error instanceof AllocationStoreError)
      throw new CniCommandError(CniErrorCode.IoFailure, `allocation store: ${error.message}`);
    throw new CniCommandError(CniErrorCode.SetupFailed, `ADD failed: ${(error as Error).message}`);
  }
}

/**
 * The datapath and the pod's NetworkPolicy at once (the rules match interfaces by name, so
 * they may be in place before the veth exists). Waits for both, so the caller's undo never
 * races either; the datapath's error first when both fail.
 */
async function wireAndAdmit(
  deps: CniHandlerDeps,
  entry: AllocationEntry,
  netns: string,
  time: PhaseTimer,
): Promise<PodSetup> {
  const [wired, admitted] = await Promise.allSettled([
    timed(
      async () => {
        const setup = await setupPod(deps.datapath, entry, netns);
        await deps.fault?.('after-datapath');
        return setup;
      },
      (ms) => time.set('datapath', ms),
    ),
    timed(
      async () => {
        await deps.hooks?.beforeCommit?.(entry);
        await deps.fault?.('after-policy');
      },
      (ms) => time.set('policy', ms),
    ),
  ]);
  time.mark('wired');
  if (wired.status === 'rejected') throw wired.reason;
  if (admitted.status === 'rejected') throw admitted.reason;
  return wired.value;
}

/**
 * A pinned address another attachment on this node still has. The pod won its claim, so that is
 * its predecessor (same namespace and key) shutting down: one address cannot be on two veths of
 * one node, so this pod waits until that pod's network is torn down (the runtime retries the
 * ADD). A holder of another namespace (a stale entry) is refused without naming it.
 */
function pinnedInUse(deps: CniHandlerDeps, pod: Pod, floating: FloatingRequest): CniCommandError {
  const here = deps.store
    .entries()
    .find((e) => floating.pinned.some((ip) => ip === e.ip6 || ip === e.ip4));
  const ip = floating.pinned.find((a) => a === here?.ip6 || a === here?.ip4) ?? floating.pinned[0];
  if (here?.namespace === floating.namespace)
    return new CniCommandError(
      CniErrorCode.TryAgainLater,
      `pinned address ${ip}: pod ${here.namespace}/${here.pod} on this node still has it while it shuts down; this pod takes it once that pod's network is torn down; try again later`,
    );
  const message = `pinned address ${ip} is in use on this node by a pod of another namespace`;
  deps.warn?.(pod, 'FlockAllocationFailed', message);
  return new CniCommandError(CniErrorCode.NotAllowed, message);
}
