// What Routing is configured with and runs on (settings from flags, the agent's collaborators).
import type { Logger, Pod } from '@flock/api';
import type { BirdControl } from '@flock/bird';
import type { AllocationStore } from '../store/index.js';
import type { Cache, CacheView, KubeTransport } from '@flock/kube';
import type { Datapath } from '../datapath/index.js';
import type { NodeConfigTracker } from '../node/node-config.js';
import type { AgentMetrics } from '../core/metrics.js';
import type { ClaimOf } from '../claims/ownership.js';
import type { SecretReader } from './peer-secrets.js';
import type { HealthCheck } from './kube-proxy-health.js';
import type { ReadKubeProxy } from './kube-proxy-rules.js';
import type { NodeView } from './router-id.js';
import type { ServiceView, SliceView } from './service-addresses.js';

/** Routes in the model BIRD last accepted, by class. */
export interface ExportedRoutes {
  aggregate: number;
  pinned: number;
  anycast: number;
  /** Service addresses and Service CIDRs. */
  services: number;
}

export interface RoutingSettings {
  /** bird.conf, shared with the BIRD container. */
  birdConfigPath: string;
  /** The BFD speaker's config (with deps.bfd): BFD runs there, not in the BGP BIRD. */
  bfdConfigPath?: string;
  /** --router-id: wins over everything else. */
  routerIdOverride?: string;
  /** How often the peers' Secrets and the router ID are re-read (--sweep-period). */
  refreshPeriodMs: number;
  anycastPeriodMs: number;
  bgpStatusPeriodMs: number;
  /** Namespace of a passwordSecretRef without one (the agent's own). */
  secretNamespace: string;
  /** Where the last BGP passwords read are kept across restarts (none: memory only). */
  passwordFile?: string;
  /** --max-host-routes: the node's host routes are capped there (host-route-cap.ts). */
  maxHostRoutes?: number;
}

export interface RoutingDeps {
  nodeName: string;
  transport: KubeTransport;
  logger: Logger;
  store: Pick<AllocationStore, 'entries'>;
  /** This node's pods (the pod cache's by-node view). */
  pods: CacheView<Pod>;
  /** Who owns each floating address (the claims cache). */
  claimOf: ClaimOf;
  /** The cluster's Services and this node's ready endpoints (absent: no Service addresses). */
  services?: { services: Cache<ServiceView>; slices: Cache<SliceView> };
  /** kube-proxy's health check of a Local Service on this node (default: HTTP to it). */
  kubeProxyHealth?: HealthCheck;
  /**
   * Read which Service addresses kube-proxy's rules on this node hold (main.ts: its nftables
   * maps). Absent: not asked (every address is taken as delivered).
   */
  readKubeProxy?: ReadKubeProxy;
  /**
   * Resolves once this node's claims are in step (ClaimKeeper's first pass: what live pods
   * held before claims existed is claimed): nothing floating is announced before.
   */
  claimsReady: () => Promise<void>;
  nodeConfig: NodeConfigTracker;
  /**
   * This node's Node from the agent's watch of it: the router ID and BFD sources are read there
   * (absent, or before it has synced: one GET of the Node per refresh).
   */
  node?: NodeView;
  datapath: Pick<Datapath, 'listAnycastRoutes' | 'ensureAnycastRoute'>;
  /** reload: configure (a few quick attempts; the announcer retries). status: show protocols. */
  bird: { reload: BirdControl; status: BirdControl };
  /** The BFD speaker's control socket (with settings.bfdConfigPath). */
  bfd?: BirdControl;
  settings: RoutingSettings;
  /** Default: GET from the API server. */
  readSecret?: SecretReader;
  /** A Warning Event about this node's BGP peers (on its NodeConfig). */
  warn?: (reason: string, note: string) => void;
  now?: () => number;
  /** The agent's metrics: BIRD reloads, ADD → exported, loop runs. */
  metrics?: AgentMetrics;
}
