// What the CNI handlers work with: the store, the datapath, the node's state, the pod lookup,
// and the hooks other parts of the agent hang on ADD and DEL.
import type { Logger, NodeConfig, Pod } from '@flock/api';
import type { AddressAllocator, AllocationEntry, AllocationStore } from '@flock/ipam';
import type { Datapath } from '../datapath/index.js';
import type { FaultHook, HandlerFaultPoint } from '../faults.js';

/** The node's current configuration and address space; undefined until the agent is ready. */
export interface NodeState {
  nodeConfig: NodeConfig;
  allocator: AddressAllocator;
}

/** Where ADD finds the Pod object (the node's pod cache, falling back to the API server). */
export interface PodLookup {
  get(namespace: string, name: string, uid?: string): Promise<Pod | undefined>;
  /**
   * Pods of the whole cluster, not terminated, that hold any of `ips` (in any entry of
   * status.podIPs, whatever its family: a pod's secondary address counts as much as its
   * primary one).
   */
  holdersOf?(ips: readonly string[]): Promise<Pod[]>;
}

/** What other parts of the agent do around ADD and DEL. */
export interface CniHooks {
  /**
   * After the pending write, while the datapath wires the pod (the rules match interfaces by
   * name, so they may be in place before the veth exists); commit waits for both.
   */
  beforeCommit?(entry: AllocationEntry): Promise<void>;
  /** After an allocation was committed or removed (announcements, anycast routes). */
  changed?(): void;
}

/** Tell the pod's owner about a refusal (a Kubernetes Event on the pod). */
export type PodWarning = (pod: Pod, reason: string, message: string) => void;

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
