// One pod's wiring on a Kernel: create it fresh in two batches, or bring an existing veth to
// the spec by reading both sides and writing only the differences; clean up after a failed
// setup; tear down only a veth that is provably this pod's (by its MAC, or because the caller's
// store says no other pod can have its name); report drift.
import type { Logger } from '@flock/api';
import { FLOCK_RT_PROTO, GATEWAY4, GATEWAY6, vethMacs } from './naming.js';
import { leftoverPodRoutes } from './host-routes.js';
import { ApplyError, NetnsMissingError, type Kernel } from './kernel.js';
import { HOST, findLink, podNs, type Action, type NsState } from './model.js';
import {
  diffHost,
  diffPod,
  freshHostActions,
  freshPodActions,
  hostVethSysctls,
  isPair,
  podHasIpv4,
} from './plan.js';
import {
  DatapathError,
  type DatapathStep,
  type Finding,
  type PodSetupResult,
  type PodTeardownResult,
} from './types.js';
import { hostCidr, type ValidPod, type ValidTeardown } from './validate.js';

/** How many read-fix passes an existing pod gets before setupPod gives up. */
const MAX_PASSES = 3;

/** The datapath only warns. */
export type DatapathLogger = Pick<Logger, 'warn'>;

/** Any failure as a DatapathError naming its step (`step` when nothing better is known). */
export function asDatapathError(e: unknown, step: DatapathStep): DatapathError {
  if (e instanceof DatapathError) return e;
  if (e instanceof ApplyError) return new DatapathError(e.step, e.message, { cause: e });
  return new DatapathError(step, e instanceof Error ? e.message : String(e), { cause: e });
}

interface Macs {
  hostMac: string;
  podMac: string;
}

function anycastRemovals(cidrs: string[]): Action[] {
  return cidrs.map((cidr) => ({ op: 'addr-del', step: 'pod-anycast', dev: 'lo', cidr }));
}

export class PodWiring {
  private sysctlWarned = false;
  constructor(
    private readonly kernel: Kernel,
    private readonly logger?: DatapathLogger,
  ) {}

  async setup(pod: ValidPod): Promise<PodSetupResult> {
    const derived = vethMacs(pod.containerID, pod.ifName);
    for (let attempt = 0; attempt < 2; attempt++) {
      if (await this.createFresh(pod, derived)) return this.result(pod, derived, true);
      const macs = await this.reconcile(pod);
      if (macs) return this.result(pod, macs, false);
      // Neither end exists any more (deleted meanwhile): create it afresh, once.
    }
    throw new DatapathError('create-veth', `${pod.hostVeth} kept appearing and vanishing`);
  }

  /** Two batches, host then pod. False when the veth already exists (nothing was changed). */
  private async createFresh(pod: ValidPod, macs: Macs): Promise<boolean> {
    try {
      await this.kernel.apply(HOST, freshHostActions(pod, macs));
    } catch (e) {
      if (e instanceof ApplyError && e.index === 0 && e.exists) return false;
      // Line 0 failing otherwise created nothing; a later line means the veth exists.
      if (!(e instanceof ApplyError && e.index === 0)) await this.cleanup(pod, macs.hostMac, false);
      throw asDatapathError(e, 'create-veth');
    }
    await this.hardenHostVeth(pod.hostVeth);
    try {
      await this.kernel.apply(podNs(pod.netns), freshPodActions(pod, macs.hostMac));
    } catch (e) {
      await this.cleanup(pod, macs.hostMac, true);
      throw asDatapathError(e, 'pod-link');
    }
    return true;
  }

  /**
   * The host veth's sysctls (hostVethSysctls), before the pod side is up. Best effort: a node
   * whose /proc/sys the agent cannot write still gets its pods (nftables filters what matters),
   * and says so once.
   */
  private async hardenHostVeth(veth: string): Promise<void> {
    const failed = (await this.kernel.writeHostSysctls(hostVethSysctls(veth))).filter((r) => !r.ok);
    if (failed.length && !this.sysctlWarned) {
      this.sysctlWarned = true;
      this.logger?.warn('datapath: could not set a pod veth sysctl (logged once)', {
        hostVeth: veth,
        key: failed[0]?.key,
        error: failed[0]?.error,
      });
    }
  }

  /** Release what a failed setup took: the veth (if it is ours) and the anycast addresses. */
  private async cleanup(pod: ValidPod, hostMac: string, anycastToo: boolean): Promise<void> {
    try {
      await this.deleteOwnedVeth(pod.hostVeth, hostMac, []);
      if (anycastToo && pod.anycast.length && (await this.kernel.netnsExists(podNs(pod.netns))))
        await this.kernel.applyAll(podNs(pod.netns), anycastRemovals(pod.anycast.map(hostCidr)));
    } catch (e) {
      this.logger?.warn('datapath: cleanup after a failed setup failed', {
        hostVeth: pod.hostVeth,
        error: e instanceof Error ? e.message : String(e),
      });
    }
  }

  private readHost(pod: { hostVeth: string; ip6?: string; ip4?: string }): Promise<NsState> {
    const exact = [pod.ip6 && `${pod.ip6}/128`, pod.ip4 && `${pod.ip4}/32`].filter(
      (x): x is string => !!x,
    );
    return this.kernel
      .read(HOST, {
        links: { names: [pod.hostVeth] },
        ...(exact.length ? { routes: { exact } } : {}),
      })
      .catch((e: unknown) => Promise.reject(asDatapathError(e, 'read-host')));
  }

  private readPod(pod: ValidPod): Promise<NsState> {
    return this.kernel
      .read(podNs(pod.netns), { links: 'all', routes: 'all', neighbours: true })
      .catch((e: unknown) => Promise.reject(asDatapathError(e, 'read-pod')));
  }

  /**
   * Bring an existing veth to the spec: read both sides, fix only what differs, and read again
   * until nothing differs. A quiet pass writes nothing. Undefined when neither end exists.
   */
  private async reconcile(pod: ValidPod): Promise<Macs | undefined> {
    for (let pass = 1; ; pass++) {
      const [host, inPod] = await Promise.all([this.readHost(pod), this.readPod(pod)]);
      const hostLink = findLink(host, pod.hostVeth);
      const podLink = findLink(inPod, pod.ifName);
      if (!hostLink && !podLink) return undefined;
      if (!hostLink)
        throw new DatapathError(
          'create-veth',
          `${pod.ifName} already exists in ${pod.netns} and is not flock's veth ${pod.hostVeth}`,
        );
      if (!isPair(hostLink, podLink))
        throw new DatapathError(
          'create-veth',
          `${pod.hostVeth} exists but is not the peer of ${pod.ifName} in ${pod.netns} ` +
            '(a name collision or a leftover): refusing to touch it',
        );
      const macs = { hostMac: hostLink.mac, podMac: podLink?.mac ?? '' };
      const hostDiff = diffHost(pod, host, macs.hostMac);
      const podDiff = diffPod(pod, inPod, macs.hostMac);
      if (!hostDiff.actions.length && !podDiff.actions.length) return macs;
      const first = hostDiff.actions[0] ?? podDiff.actions[0];
      if (pass > MAX_PASSES)
        throw new DatapathError(
          first?.step ?? 'pod-link',
          `still differs after ${MAX_PASSES} passes: ${[...hostDiff.findings, ...podDiff.findings].map((f) => f.message).join('; ')}`,
        );
      try {
        await this.kernel.apply(HOST, hostDiff.actions);
        await this.kernel.apply(podNs(pod.netns), podDiff.actions);
      } catch (e) {
        throw asDatapathError(e, first?.step ?? 'pod-link');
      }
    }
  }

  private result(pod: ValidPod, macs: Macs, created: boolean): PodSetupResult {
    const ips: PodSetupResult['ips'] = [
      { address: `${pod.ip6}/128`, gateway: GATEWAY6, interface: 1 },
    ];
    if (pod.ip4) ips.push({ address: `${pod.ip4}/32`, gateway: GATEWAY4, interface: 1 });
    const routes: PodSetupResult['routes'] = [{ dst: '::/0', gw: GATEWAY6 }];
    if (podHasIpv4(pod)) routes.push({ dst: '0.0.0.0/0', gw: GATEWAY4 });
    const mtu = pod.mtu !== undefined ? { mtu: pod.mtu } : {};
    return {
      hostVeth: pod.hostVeth,
      hostMac: macs.hostMac,
      podMac: macs.podMac,
      interfaces: [
        { name: pod.hostVeth, mac: macs.hostMac, ...mtu },
        { name: pod.ifName, mac: macs.podMac, ...mtu, sandbox: pod.netns },
      ],
      ips,
      routes,
      created,
    };
  }

  /**
   * Delete the veth when its MAC says it is this pod's (a colliding name belongs to another
   * pod), plus the given leftover routes. Returns whether a veth of that name exists, is ours.
   */
  private async deleteOwnedVeth(
    hostVeth: string,
    hostMac: string,
    dsts: string[],
  ): Promise<{ exists: boolean; owned: boolean; removedRoutes: string[] }> {
    const host = await this.kernel
      .read(HOST, {
        links: { names: [hostVeth] },
        ...(dsts.length ? { routes: { exact: dsts } } : {}),
      })
      .catch((e: unknown) => Promise.reject(asDatapathError(e, 'read-host')));
    const link = findLink(host, hostVeth);
    const owned = link !== undefined && link.mac === hostMac;
    const leftovers = leftoverPodRoutes(host.routes, dsts, hostVeth).filter(
      // Routes through our own veth go with it.
      (r) => !(owned && r.nexthops.every((n) => n.dev === hostVeth)),
    );
    const actions: Action[] = [
      ...(owned ? [{ op: 'link-del', step: 'delete-veth', name: hostVeth } as const] : []),
      ...leftovers.map((r): Action => ({
        op: 'route-del',
        step: 'host-routes',
        route: { dst: r.dst, type: 'unicast', proto: FLOCK_RT_PROTO, nexthops: [] },
      })),
    ];
    const failures = await this.kernel.applyAll(HOST, actions);
    const vethFailure = failures.find((f) => f.step === 'delete-veth');
    if (vethFailure) {
      const still = findLink(
        await this.kernel.read(HOST, { links: { names: [hostVeth] } }),
        hostVeth,
      );
      if (still)
        throw new DatapathError('delete-veth', vethFailure.message, { cause: vethFailure });
    }
    for (const f of failures.filter((x) => x.step !== 'delete-veth'))
      this.logger?.warn('datapath: could not remove a leftover route', { error: f.message });
    const failedLines = new Set(failures.map((f) => f.index));
    return {
      exists: link !== undefined,
      owned,
      removedRoutes: leftovers
        .filter((_, i) => !failedLines.has(i + (owned ? 1 : 0)))
        .map((r) => r.dst),
    };
  }

  /**
   * Delete the veth and any flock route to `dsts` in one batch, unread: for a caller that
   * vouches both are this pod's (PodTeardownSpec.exclusive). Routes through the veth go with
   * it, so a route line that succeeds removed a leftover. Reads only when the delete failed.
   */
  private async deleteExclusiveVeth(
    hostVeth: string,
    dsts: string[],
  ): Promise<{ exists: boolean; owned: boolean; removedRoutes: string[] }> {
    const failures = await this.kernel.applyAll(HOST, [
      { op: 'link-del', step: 'delete-veth', name: hostVeth },
      ...dsts.map((dst): Action => ({
        op: 'route-del',
        step: 'host-routes',
        route: { dst, type: 'unicast', proto: FLOCK_RT_PROTO, nexthops: [] },
      })),
    ]);
    const failed = new Set(failures.map((f) => f.index));
    const vethFailure = failures.find((f) => f.step === 'delete-veth');
    if (vethFailure) {
      const host = await this.kernel.read(HOST, { links: { names: [hostVeth] } });
      if (findLink(host, hostVeth))
        throw new DatapathError('delete-veth', vethFailure.message, { cause: vethFailure });
    }
    return {
      exists: !vethFailure,
      owned: !vethFailure,
      removedRoutes: dsts.filter((_, i) => !failed.has(i + 1)),
    };
  }

  async teardown(t: ValidTeardown): Promise<PodTeardownResult> {
    const { hostMac } = vethMacs(t.containerID, t.ifName);
    const dsts = [t.ip6 && `${t.ip6}/128`, t.ip4 && `${t.ip4}/32`].filter((x): x is string => !!x);
    let outcome: Awaited<ReturnType<PodWiring['deleteOwnedVeth']>>;
    try {
      outcome = t.exclusive
        ? await this.deleteExclusiveVeth(t.hostVeth, dsts)
        : await this.deleteOwnedVeth(t.hostVeth, hostMac, dsts);
    } catch (e) {
      throw asDatapathError(e, 'delete-veth');
    }
    if (outcome.exists && !outcome.owned)
      this.logger?.warn('datapath: a veth of this name belongs to another pod; left alone', {
        hostVeth: t.hostVeth,
        containerID: t.containerID,
      });
    // The pod's lo keeps its anycast addresses after the veth is gone; a later ADD into the
    // same namespace must not inherit them.
    if (t.netns && t.anycast.length && (await this.kernel.netnsExists(podNs(t.netns))))
      await this.kernel
        .applyAll(podNs(t.netns), anycastRemovals(t.anycast.map(hostCidr)))
        .catch((e: unknown) =>
          this.logger?.warn('datapath: anycast cleanup failed', { error: String(e) }),
        );
    return {
      deletedVeth: outcome.owned,
      notOwned: outcome.exists && !outcome.owned,
      removedRoutes: outcome.removedRoutes,
    };
  }

  async check(pod: ValidPod): Promise<Finding[]> {
    const [host, inPod] = await Promise.all([
      this.readHost(pod),
      this.readPod(pod).catch((e: unknown) => {
        if (e instanceof DatapathError && e.cause instanceof NetnsMissingError) return undefined;
        throw e;
      }),
    ]);
    const hostLink = findLink(host, pod.hostVeth);
    const hostMac = hostLink?.mac ?? vethMacs(pod.containerID, pod.ifName).hostMac;
    const findings = [...diffHost(pod, host, hostMac).findings];
    if (!inPod) {
      findings.push({
        kind: 'pod-netns-missing',
        object: pod.netns,
        message: `${pod.netns} does not exist`,
      });
      return findings;
    }
    const podLink = findLink(inPod, pod.ifName);
    if (hostLink && podLink && !isPair(hostLink, podLink))
      findings.push({
        kind: 'host-veth-not-paired',
        object: pod.hostVeth,
        message: `${pod.hostVeth} is not the peer of ${pod.ifName} in ${pod.netns}`,
      });
    return [...findings, ...diffPod(pod, inPod, hostMac).findings];
  }
}
