// The Datapath over any Kernel: validation at the door, pods handed to PodWiring, node-wide
// routes (blackholes, anycast) read and changed only where they differ. IprouteDatapath runs
// it on the real kernel, FakeDatapath on the in-memory one, so both behave alike by
// construction; the contract tests hold the two kernels to the same results.
import { FLOCK_ANYCAST_RT_PROTO, FLOCK_RT_PROTO } from './naming.js';
import {
  anycastRouteAt,
  anycastUpToDate,
  blackholeSpec,
  diffBlackholes,
  planAnycast,
  toAnycastRoutes,
  toFlockRoutes,
  toPodVeths,
} from './host-routes.js';
import type { Kernel } from './kernel.js';
import { HOST, type Action } from './model.js';
import { PodWiring, asDatapathError, type DatapathLogger } from './pod-wiring.js';
import type {
  AnycastRoute,
  Datapath,
  EnsureAnycastResult,
  EnsureBlackholesResult,
  Finding,
  FlockRoute,
  PodSetupResult,
  PodSpec,
  PodTeardownResult,
  PodTeardownSpec,
  PodVeth,
  SysctlResult,
} from './types.js';
import { DatapathError } from './types.js';
import {
  hostCidr,
  validAddress,
  validCidr,
  validHostVeth,
  validatePod,
  validateTeardown,
} from './validate.js';

export type { DatapathLogger };

/** What the agent wants of the node: forwarding, and flows spread over anycast nexthops. */
export const HOST_SYSCTLS: Readonly<Record<string, string>> = {
  'net.ipv4.ip_forward': '1',
  'net.ipv6.conf.all.forwarding': '1',
  'net.ipv4.fib_multipath_hash_policy': '1',
  'net.ipv6.fib_multipath_hash_policy': '1',
};

export class FlockDatapath implements Datapath {
  private readonly pods: PodWiring;

  constructor(
    protected readonly kernel: Kernel,
    logger?: DatapathLogger,
  ) {
    this.pods = new PodWiring(kernel, logger);
  }

  // async: a refused spec rejects the promise, it does not throw at the call.
  async setupPod(spec: PodSpec): Promise<PodSetupResult> {
    return this.pods.setup(validatePod(spec));
  }

  async teardownPod(spec: PodTeardownSpec): Promise<PodTeardownResult> {
    return this.pods.teardown(validateTeardown(spec));
  }

  async checkPod(spec: PodSpec): Promise<Finding[]> {
    return this.pods.check(validatePod(spec));
  }

  async deleteStrayVeth(name: string): Promise<boolean> {
    const hostVeth = validHostVeth(name);
    const host = await this.kernel
      .read(HOST, { links: { names: [hostVeth] } })
      .catch((e: unknown) => Promise.reject(asDatapathError(e, 'read-host')));
    if (!host.links.some((l) => l.name === hostVeth && l.kind === 'veth')) return false;
    await this.kernel
      .apply(HOST, [{ op: 'link-del', step: 'delete-veth', name: hostVeth }])
      .catch((e: unknown) => Promise.reject(asDatapathError(e, 'delete-veth')));
    return true;
  }

  async listPodVeths(): Promise<PodVeth[]> {
    const host = await this.kernel
      .read(HOST, { links: { kind: 'veth' }, routes: { protos: [FLOCK_RT_PROTO] } })
      .catch((e: unknown) => Promise.reject(asDatapathError(e, 'read-host')));
    return toPodVeths(host.links, host.routes);
  }

  /** The routes of these protocols, and any route to exactly one of `exact`. */
  private async flockRoutes(protos: number[], exact?: string[]) {
    const host = await this.kernel
      .read(HOST, { routes: { protos, ...(exact ? { exact } : {}) } })
      .catch((e: unknown) => Promise.reject(asDatapathError(e, 'read-host')));
    return host.routes;
  }

  async listFlockRoutes(): Promise<FlockRoute[]> {
    return toFlockRoutes(await this.flockRoutes([FLOCK_RT_PROTO, FLOCK_ANYCAST_RT_PROTO]));
  }

  async ensureBlackholes(cidrs: string[]): Promise<EnsureBlackholesResult> {
    const wanted = [...new Set(cidrs.map((c) => validCidr(c, 'blackhole')))];
    const { add, remove } = diffBlackholes(await this.flockRoutes([FLOCK_RT_PROTO]), wanted);
    const actions: Action[] = [
      ...add.map((dst): Action => ({
        op: 'route-replace',
        step: 'blackholes',
        route: blackholeSpec(dst),
      })),
      ...remove.map((dst): Action => ({
        op: 'route-del',
        step: 'blackholes',
        route: blackholeSpec(dst),
      })),
    ];
    await this.kernel
      .apply(HOST, actions)
      .catch((e: unknown) => Promise.reject(asDatapathError(e, 'blackholes')));
    return { added: add, removed: remove };
  }

  async ensureAnycastRoute(ip: string, hostVeths: string[]): Promise<EnsureAnycastResult> {
    const address = validAddress(ip, 'anycast address');
    hostVeths.forEach((v) => validHostVeth(v));
    const dst = hostCidr(address);
    const routes = await this.flockRoutes([FLOCK_RT_PROTO, FLOCK_ANYCAST_RT_PROTO], [dst]);
    // `route replace` would overwrite whatever route holds this address: a pod's own route, or
    // one another protocol (an operator, another daemon) put there. Never: only ours is replaced.
    const foreign = routes.find((r) => r.dst === dst && r.proto !== FLOCK_ANYCAST_RT_PROTO);
    if (foreign)
      throw new DatapathError(
        'anycast-route',
        `${dst} is routed by protocol ${foreign.proto} (a pod address or another daemon's route); the anycast route is not put over it`,
      );
    const plan = planAnycast(address, hostVeths, routes);
    const current = anycastRouteAt(routes, dst);
    const result = { hostVeths: plan.hostVeths, skipped: plan.skipped };
    if (anycastUpToDate(current, plan)) return { changed: false, ...result };
    const action: Action = plan.want
      ? { op: 'route-replace', step: 'anycast-route', route: plan.want }
      : {
          op: 'route-del',
          step: 'anycast-route',
          route: {
            dst: hostCidr(address),
            type: 'unicast',
            proto: FLOCK_ANYCAST_RT_PROTO,
            nexthops: [],
          },
        };
    await this.kernel
      .apply(HOST, [action])
      .catch((e: unknown) => Promise.reject(asDatapathError(e, 'anycast-route')));
    return { changed: true, ...result };
  }

  async listAnycastRoutes(): Promise<AnycastRoute[]> {
    return toAnycastRoutes(await this.flockRoutes([FLOCK_ANYCAST_RT_PROTO]));
  }

  async applyHostSysctls(): Promise<SysctlResult[]> {
    return this.kernel.writeHostSysctls({ ...HOST_SYSCTLS });
  }
}
