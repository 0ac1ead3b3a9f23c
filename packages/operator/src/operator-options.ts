// What startOperator takes and what it gives back (operator.ts wires it).
import type { KubeTransport, Logger } from '@flock/kube';
import type { Registry } from 'prom-client';
import type { RelayScale } from './peer-relay/scaler.js';

export interface OperatorOptions {
  transport: KubeTransport;
  logger: Logger;
  /** Unique per process (the caller adds a random suffix to the pod name). */
  identity: string;
  /** Namespace of the leader election Lease (default flock-system). */
  namespace?: string;
  leaseName?: string;
  /** Default true; without it this process acts alone (never run two like that). */
  leaderElect?: boolean;
  leaseDurationMs?: number;
  renewDeadlineMs?: number;
  retryPeriodMs?: number;
  /** Serve /healthz, /readyz and /metrics here (0: any free port); absent: no server. */
  healthPort?: number;
  healthHost?: string;
  /** How long a freed node prefix is held back (default 24 h). */
  quarantineMs?: number;
  /** API writes in flight at most (default 16). */
  concurrency?: number;
  /** Pools reconciled in parallel (default 2). */
  workers?: number;
  /** Restart a watch that was silent this long (default 5 min). */
  watchdogMs?: number;
  /** How often the claim GC looks for claims whose owners are gone (default 30 s). */
  claimGcPeriodMs?: number;
  /** How long a claim may have no holder before the claim GC deletes it (default 60 s). */
  claimGraceMs?: number;
  /** Give addresses to LoadBalancer Services without a class too (default true). */
  serveUnsetLbClass?: boolean;
  /** How long a Service address let go is held back from other owners (default 5 min). */
  serviceQuarantineMs?: number;
  /** Publish PeerSlices and NodePeers for the agents (default true). */
  peerSlices?: boolean;
  /** How long pod changes of a namespace are gathered before its slices are written. */
  peerSliceBatchMs?: number;
  /** Scale the peer relay's Deployment (in `namespace`) by node count, while leading. */
  peerRelayScale?: { deployment: string } & RelayScale;
  registry?: Registry;
  /** Process metrics (CPU, memory, event loop) in the registry (default true). */
  processMetrics?: boolean;
}

export interface Operator {
  readonly registry: Registry;
  /** The health server's port, when one runs. */
  readonly healthPort: number | undefined;
  /** True while this process leads and its controller runs. */
  isLeader(): boolean;
  /** Caches synced and leader election (or the controller) running. */
  isReady(): boolean;
  /** Stop leading (release the Lease), finish running reconciles, stop watching. */
  stop(): Promise<void>;
}
