// What the CNI handlers work with: the store, the datapath, the node's state, the pod lookup,
// and the hooks other parts of the agent hang on ADD and DEL.
import type { Logger, Pod, ReservedHostPorts } from '@flock/api';
import type { AllocationEntry, AllocationStore } from '../store/index.js';
import type { Datapath } from '../datapath/index.js';
import type { FaultHook, HandlerFaultPoint } from '../core/faults.js';
import type { NodeState } from '../node/node-config.js';
import type { PodLookup } from '../node/pods.js';
import type { ClaimBook } from '../claims/book.js';
import type { NamespaceRef } from '../claims/grants.js';
import type { ClaimKeeper } from '../claims/keeper.js';

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

/** Address ownership at ADD: the grants' namespace check, the claims, the keeper kept off. */
export interface FloatingClaims {
  book: Pick<ClaimBook, 'claimPinned' | 'joinAnycast'>;
  keeper: Pick<ClaimKeeper, 'hold'>;
  /** The pod's namespace with its labels (grants select namespaces by label). */
  namespace: (name: string) => Promise<NamespaceRef>;
}

/** Tell the pod's owner about a refusal (a Kubernetes Event on the pod). */
export type PodWarning = (pod: Pod, reason: string, message: string) => void;

export interface CniHandlerDeps {
  store: AllocationStore;
  datapath: Datapath;
  node: () => NodeState | undefined;
  pods: PodLookup;
  claims: FloatingClaims;
  logger: Logger;
  hooks?: CniHooks;
  warn?: PodWarning;
  /**
   * Ports no hostPort may take on this node (core/config.ts reservedHostPorts: the daemons',
   * the agent's, --reserved-host-ports); absent: the daemons' only (NODE_DAEMON_PORTS).
   */
  reservedHostPorts?: readonly ReservedHostPorts[];
  /** Test-only: called at each fault point (may throw or kill the process); see faults.ts. */
  fault?: FaultHook<HandlerFaultPoint>;
  /** STATUS readiness beyond having a NodeConfig (start-up finished). */
  ready?: () => boolean;
}
