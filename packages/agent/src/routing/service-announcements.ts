// The Service half of the announcement pass: which claimed Service addresses this node announces
// now, gated on kube-proxy here (its health check of a Local Service, and its rules holding the
// address). Only claimed, in-range addresses are ever asked about or remembered: what a namespace
// writes into a Service beyond that costs the node nothing.
import type { Logger, NodeConfigSpec } from '@flock/api';
import type { Cache } from '@flock/kube';
import type { ClaimOf } from '../claims/ownership.js';
import { AnswerGate } from './answer-gate.js';
import { anyAddressHealthy, type HealthCheck } from './kube-proxy-health.js';
import { KubeProxyAddresses } from './kube-proxy-addresses.js';
import { rulesKey, type ReadKubeProxy } from './kube-proxy-rules.js';
import {
  BY_SERVICE,
  claimedServiceAddresses,
  planServiceAddresses,
  type ClaimedServiceAddress,
  type ServicePlan,
  type ServiceView,
  type SliceView,
} from './service-addresses.js';

/** How long the first pass waits for the Service caches. */
const SERVICE_SYNC_WAIT_MS = 10_000;

export interface ServiceAnnouncementsDeps {
  caches: { services: Cache<ServiceView>; slices: Cache<SliceView> };
  claimOf: ClaimOf;
  logger: Logger;
  /** kube-proxy's health check of a Local Service on one of the node's addresses. */
  health: HealthCheck;
  /** The node's InternalIPs (where kube-proxy's health checks listen). */
  internalIps: () => string[];
  /** Read kube-proxy's rules here (absent: every address is taken as held). */
  readKubeProxy?: ReadKubeProxy | undefined;
  /** Some answer changed or is due again: re-plan after delayMs. */
  replan: (delayMs: number) => void;
}

export class ServiceAnnouncements {
  /** kube-proxy's health check of each Local Service (by its port): local endpoints there. */
  private readonly localTraffic: AnswerGate<number>;
  /** The Service addresses kube-proxy's rules hold here (a yes stays yes). */
  private readonly kubeProxyRules: KubeProxyAddresses | undefined;

  constructor(private readonly deps: ServiceAnnouncementsDeps) {
    this.localTraffic = new AnswerGate(
      (port) => anyAddressHealthy(deps.health, deps.internalIps(), port),
      deps.replan,
    );
    if (deps.readKubeProxy)
      this.kubeProxyRules = new KubeProxyAddresses(deps.readKubeProxy, deps.replan, (error) =>
        deps.logger.warn("reading kube-proxy's rules failed", { error: String(error) }),
      );
  }

  /**
   * Before the first pass after a start: the Service caches synced and kube-proxy asked about
   * every claimed address, so a restarted agent renders the Service addresses it announced
   * before instead of withdrawing them for a moment (a flap on the router). Bounded: caches that
   * cannot sync (RBAC of an older chart) must not hold back the pods' routes.
   */
  async ready(spec: NodeConfigSpec | undefined, stopped: () => boolean): Promise<void> {
    const { caches, logger } = this.deps;
    let timer: NodeJS.Timeout | undefined;
    const synced = await Promise.race([
      Promise.all([caches.services.synced, caches.slices.synced]).then(
        () => true,
        () => false,
      ),
      new Promise<false>((resolve) => {
        timer = setTimeout(() => resolve(false), SERVICE_SYNC_WAIT_MS).unref();
      }),
    ]);
    clearTimeout(timer);
    if (!synced) {
      if (!stopped())
        logger.warn('Service caches not synced: announcing without Service addresses', {
          waitedMs: SERVICE_SYNC_WAIT_MS,
        });
      return;
    }
    if (!spec) return;
    const { claimed } = this.claimed(spec);
    await Promise.all([
      this.localTraffic.ask(healthPorts(claimed)),
      this.kubeProxyRules?.ask(ruleLookups(claimed)),
    ]);
  }

  /** The Service addresses to announce now; undefined before the caches synced. */
  plan(spec: NodeConfigSpec): ServicePlan | undefined {
    const { caches } = this.deps;
    if (!caches.services.hasSynced || !caches.slices.hasSynced) return undefined;
    const { claimed, warnings } = this.claimed(spec);
    this.localTraffic.keep(new Set(healthPorts(claimed)));
    this.kubeProxyRules?.keep(new Set(ruleLookups(claimed).map((l) => rulesKey(...l))));
    const rules = this.kubeProxyRules;
    const addresses = planServiceAddresses({
      claimed,
      readyHere: (namespace, name) =>
        caches.slices
          .byIndex(BY_SERVICE, `${namespace}/${name}`)
          .reduce((n, s) => n + s.readyHere, 0),
      kubeProxyReady: (port) => this.localTraffic.open(port),
      ...(rules ? { kubeProxyHas: (ip, p) => rules.has(ip, p.protocol, p.port) } : {}),
    });
    return { addresses, warnings };
  }

  private claimed(spec: NodeConfigSpec) {
    return claimedServiceAddresses({
      spec,
      services: this.deps.caches.services.list(),
      claimOf: this.deps.claimOf,
    });
  }
}

/** What kube-proxy's rules are looked up by for each of `claimed` (none without a port). */
const ruleLookups = (claimed: readonly ClaimedServiceAddress[]) =>
  claimed.flatMap(({ service: { port }, address }) =>
    port ? [[address, port.protocol, port.port] as const] : [],
  );

/** The health check ports of the Local Services among `claimed`. */
const healthPorts = (claimed: readonly ClaimedServiceAddress[]): number[] =>
  claimed.flatMap(({ service: s }) =>
    s.localTraffic && s.healthCheckNodePort !== undefined ? [s.healthCheckNodePort] : [],
  );
