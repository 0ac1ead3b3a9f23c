// What the agent is built from (every kernel and API edge, injected) and what a running agent
// exposes (tests and main.ts read its parts).
import type { Logger } from '@flock/api';
import type { BirdControl } from '@flock/bird';
import type { FileSystem } from '@flock/exec';
import type { KubeTransport } from '@flock/kube';
import type { Registry } from 'prom-client';
import type { CniHandlers, FaultPoint } from './cni/handlers.js';
import type { OrphanSweep } from './cni/orphan-sweep.js';
import type { AgentConfig } from './core/config.js';
import type { Datapath } from './datapath/index.js';
import type { InterNodeTranslator } from './nat64/siit.js';
import type { Nat64Translator } from './nat64/tayga.js';
import type { NodeStatusReporter } from './node-status/status-reporter.js';
import type { NodeConfigTracker } from './node/node-config.js';
import type { NftListTable, PolicyApplier, PolicyReconciler } from './policy/index.js';
import type { Routing } from './routing/index.js';
import type { HealthCheck } from './routing/kube-proxy-health.js';
import type { ReadKubeProxy } from './routing/kube-proxy-rules.js';
import type { AllocationStore } from './store/index.js';

export interface AgentDeps {
  config: AgentConfig;
  transport: KubeTransport;
  datapath: Datapath;
  logger: Logger;
  registry?: Registry;
  /** Process metrics (CPU, memory, event loop) in the registry (default true). */
  processMetrics?: boolean;
  /** Test-only: called at ADD/DEL fault points. */
  fault?: (point: FaultPoint) => void | Promise<void>;
  /** Test-only: the allocation store's file operations (fault points inside a store write). */
  storeFileSystem?: FileSystem;
  /**
   * NetworkPolicy's kernel edge (main.ts: nftables in the node's namespace). Without it the
   * agent enforces no NetworkPolicy — only for unit tests of other parts of the agent.
   */
  policyApplier?: PolicyApplier;
  /** `nft -j list table inet flock`, for the per-pod drop counters (absent: none exported). */
  policyListing?: NftListTable;
  /** BIRD's control socket (default: BirdClients on --bird-socket); unit tests pass a fake. */
  bird?: { reload: BirdControl; status: BirdControl };
  /** The BFD speaker's control socket (default: a BirdClient on --bfd-socket, when set). */
  bfd?: BirdControl;
  /** kube-proxy's health check of a Local Service (default: HTTP to the node's addresses). */
  kubeProxyHealth?: HealthCheck;
  /** The NAT64 translator (main.ts: Tayga). Absent: spec.nat64 is not served on this node. */
  nat64?: Nat64Translator;
  /**
   * The inter-node translator of a Private pool's IPv4 (main.ts: a second Tayga). Absent: such
   * pods reach other nodes' pods over IPv6 only.
   */
  interNode?: InterNodeTranslator;
  /** Read the Service addresses kube-proxy's rules hold (main.ts: nft). Absent: not asked. */
  readKubeProxy?: ReadKubeProxy;
}

export interface RunningAgent {
  handlers: CniHandlers;
  store: AllocationStore;
  nodeConfig: NodeConfigTracker;
  /** NetworkPolicy enforcement (onResult feeds the PolicyApplied condition); absent without an applier. */
  policy?: PolicyReconciler;
  /** Announcements, anycast routes, BGP peers. */
  routing: Routing;
  /** The orphan sweep. */
  sweep: OrphanSweep;
  /** The NodeConfig status writer. */
  nodeStatus: NodeStatusReporter;
  /** Port of the health server (when enabled). */
  healthPort?: number;
  stop(): Promise<void>;
}
