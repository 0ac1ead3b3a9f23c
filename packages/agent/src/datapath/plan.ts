// What a pod's wiring must look like, as changes: all of it for a fresh veth (one batch per
// side), or only the difference from what the kernel holds — each difference is also a
// Finding for CHECK. Pure functions: no I/O.
import {
  FLOCK_RT_PROTO,
  GATEWAY4,
  GATEWAY6,
  HOST_GATEWAY4_CIDR,
  HOST_GATEWAY6_CIDR,
} from './naming.js';
import {
  SCOPE_GLOBAL,
  describeRoute,
  findLink,
  routeAt,
  routeMatches,
  type Action,
  type NsLink,
  type NsState,
  type RouteSpec,
} from './model.js';
import type { DatapathStep, Finding, FindingKind } from './types.js';
import { hostCidr, type ValidPod } from './validate.js';

interface PodDesired {
  host: { addresses: { cidr: string; nodad?: boolean; scope?: 'host' }[]; routes: RouteSpec[] };
  pod: {
    addresses: { cidr: string; nodad?: boolean }[];
    neighbours: { ip: string; mac: string }[];
    routes: RouteSpec[];
    anycast: string[];
  };
}

interface Diff {
  findings: Finding[];
  actions: Action[];
}

const podRoute = (dst: string, dev: string, gateway?: string): RouteSpec => ({
  dst,
  type: 'unicast',
  proto: FLOCK_RT_PROTO,
  nexthops: [{ dev, ...(gateway ? { gateway } : {}) }],
});

/** A pod has IPv4 routes when it has an IPv4 address of its own or an IPv4 anycast address. */
export function podHasIpv4(pod: ValidPod): boolean {
  return pod.ip4 !== undefined || pod.anycast.some((a) => a.family === 4);
}

function desiredPod(pod: ValidPod, hostMac: string): PodDesired {
  const v4 = podHasIpv4(pod);
  const hostRoutes = [podRoute(`${pod.ip6}/128`, pod.hostVeth)];
  if (pod.ip4) hostRoutes.push(podRoute(`${pod.ip4}/32`, pod.hostVeth));
  const podAddresses: { cidr: string; nodad?: boolean }[] = [
    { cidr: `${pod.ip6}/128`, nodad: true },
  ];
  if (pod.ip4) podAddresses.push({ cidr: `${pod.ip4}/32` });
  const neighbours = [{ ip: GATEWAY6, mac: hostMac }];
  if (v4) neighbours.push({ ip: GATEWAY4, mac: hostMac });
  const podRoutes = [podRoute('::/0', pod.ifName, GATEWAY6)];
  if (v4)
    podRoutes.push(
      podRoute(`${GATEWAY4}/32`, pod.ifName),
      podRoute('0.0.0.0/0', pod.ifName, GATEWAY4),
    );
  return {
    host: {
      addresses: [
        { cidr: HOST_GATEWAY6_CIDR, nodad: true },
        { cidr: HOST_GATEWAY4_CIDR, scope: 'host' },
      ],
      routes: hostRoutes,
    },
    pod: {
      addresses: podAddresses,
      neighbours,
      routes: podRoutes,
      anycast: pod.anycast.map(hostCidr),
    },
  };
}

/**
 * What the host side of each pod veth refuses: router advertisements and redirects (a pod is no
 * router). Reverse-path filtering is left to flock's nftables sources (exact per veth): strict
 * rp_filter would drop the replies of an anycast replica that is draining (not Ready), whose
 * nexthop the anycast route no longer has.
 */
export function hostVethSysctls(veth: string): Record<string, string> {
  return {
    [`net.ipv6.conf.${veth}.accept_ra`]: '0',
    [`net.ipv6.conf.${veth}.accept_redirects`]: '0',
    [`net.ipv4.conf.${veth}.accept_redirects`]: '0',
  };
}

/** Host side of a new pod: the veth (peer created directly in the pod), gateways, routes. */
export function freshHostActions(
  pod: ValidPod,
  macs: { hostMac: string; podMac: string },
): Action[] {
  const d = desiredPod(pod, macs.hostMac).host;
  const mtu = pod.mtu !== undefined ? { mtu: pod.mtu } : {};
  return [
    {
      op: 'veth-add',
      step: 'create-veth',
      name: pod.hostVeth,
      mac: macs.hostMac,
      ...mtu,
      peer: { name: pod.ifName, mac: macs.podMac, netns: pod.netns },
    },
    // No kernel link-local on the host veth: it carries exactly fe80::1.
    { op: 'link-set', step: 'host-link', name: pod.hostVeth, addrGenNone: true },
    { op: 'link-set', step: 'host-link', name: pod.hostVeth, up: true },
    ...d.addresses.map((a): Action => ({
      op: 'addr-replace',
      step: 'host-addresses',
      dev: pod.hostVeth,
      ...a,
    })),
    ...d.routes.map((route): Action => ({ op: 'route-replace', step: 'host-routes', route })),
  ];
}

/** Pod side of a new pod, on the fresh interface the host batch created. */
export function freshPodActions(pod: ValidPod, hostMac: string): Action[] {
  const d = desiredPod(pod, hostMac).pod;
  return [
    { op: 'link-set', step: 'pod-link', name: 'lo', up: true },
    // No link-local address: no DAD and no router solicitations; the gateways are static.
    { op: 'link-set', step: 'pod-link', name: pod.ifName, addrGenNone: true },
    // Up before the addresses: an IPv6 address added to a down interface does not answer
    // neighbour solicitations until the kernel's deferred setup runs (seconds later).
    { op: 'link-set', step: 'pod-link', name: pod.ifName, up: true },
    ...d.addresses.map((a): Action => ({
      op: 'addr-replace',
      step: 'pod-addresses',
      dev: pod.ifName,
      ...a,
    })),
    ...d.neighbours.map((n): Action => ({
      op: 'neigh-replace',
      step: 'pod-neighbours',
      dev: pod.ifName,
      ...n,
    })),
    ...d.routes.map((route): Action => ({ op: 'route-replace', step: 'pod-routes', route })),
    ...d.anycast.map((cidr): Action => ({
      op: 'addr-replace',
      step: 'pod-anycast',
      dev: 'lo',
      cidr,
    })),
  ];
}

/** True when the two links are the two ends of one veth. */
export function isPair(host: NsLink | undefined, pod: NsLink | undefined): boolean {
  return (
    host?.kind === 'veth' &&
    pod?.kind === 'veth' &&
    host.peerIfindex === pod.ifindex &&
    pod.peerIfindex === host.ifindex
  );
}

class DiffBuilder {
  readonly findings: Finding[] = [];
  readonly actions: Action[] = [];
  find(kind: FindingKind, object: string, message: string, fix?: Action): void {
    this.findings.push({ kind, object, message });
    if (fix) this.actions.push(fix);
  }
}

const STEP_ORDER: DatapathStep[] = [
  'host-link',
  'host-addresses',
  'host-routes',
  'pod-link',
  'pod-addresses',
  'pod-neighbours',
  'pod-routes',
  'pod-anycast',
];
const byStep = (actions: Action[]) =>
  actions
    .map((a, i) => ({ a, i }))
    .sort((x, y) => STEP_ORDER.indexOf(x.a.step) - STEP_ORDER.indexOf(y.a.step) || x.i - y.i)
    .map((x) => x.a);

function diffRoutes(b: DiffBuilder, state: NsState, wanted: RouteSpec[], side: 'host' | 'pod') {
  for (const want of wanted) {
    const have = routeAt(state, want.dst);
    const fix: Action = { op: 'route-replace', step: `${side}-routes`, route: want };
    if (!have) b.find(`${side}-route-missing`, want.dst, `no route ${describeRoute(want)}`, fix);
    else if (!routeMatches(have, want))
      b.find(
        `${side}-route-wrong`,
        want.dst,
        `route is ${describeRoute(have)} (proto ${have.proto}), want ${describeRoute(want)} (proto ${want.proto})`,
        fix,
      );
  }
}

/** Differences on the host side: the veth is up with its gateways, the pod's routes use it. */
export function diffHost(pod: ValidPod, host: NsState, hostMac: string): Diff {
  const b = new DiffBuilder();
  const link = findLink(host, pod.hostVeth);
  if (!link) {
    b.find('host-veth-missing', pod.hostVeth, `host veth ${pod.hostVeth} does not exist`);
    return b;
  }
  const d = desiredPod(pod, hostMac).host;
  if (!link.up)
    b.find('host-veth-down', pod.hostVeth, `host veth ${pod.hostVeth} is down`, {
      op: 'link-set',
      step: 'host-link',
      name: pod.hostVeth,
      up: true,
    });
  if (pod.mtu !== undefined && link.mtu !== pod.mtu)
    b.find('host-mtu-wrong', pod.hostVeth, `host veth mtu is ${link.mtu}, want ${pod.mtu}`, {
      op: 'link-set',
      step: 'host-link',
      name: pod.hostVeth,
      mtu: pod.mtu,
    });
  for (const a of d.addresses) {
    if (!link.addresses.some((x) => x.cidr === a.cidr))
      b.find('host-address-missing', a.cidr, `host veth lacks gateway address ${a.cidr}`, {
        op: 'addr-replace',
        step: 'host-addresses',
        dev: pod.hostVeth,
        ...a,
      });
  }
  diffRoutes(b, host, d.routes, 'host');
  return { findings: b.findings, actions: byStep(b.actions) };
}

/** Differences inside the pod: interface, addresses, gateway neighbours, routes, anycast. */
export function diffPod(pod: ValidPod, state: NsState, hostMac: string): Diff {
  const b = new DiffBuilder();
  const d = desiredPod(pod, hostMac).pod;
  const lo = findLink(state, 'lo');
  if (lo && !lo.up)
    b.find('pod-lo-down', 'lo', 'lo is down in the pod', {
      op: 'link-set',
      step: 'pod-link',
      name: 'lo',
      up: true,
    });
  const eth = findLink(state, pod.ifName);
  if (!eth) {
    b.find('pod-interface-missing', pod.ifName, `${pod.ifName} does not exist in ${pod.netns}`);
    return b;
  }
  if (!eth.up)
    b.find('pod-interface-down', pod.ifName, `${pod.ifName} is down in the pod`, {
      op: 'link-set',
      step: 'pod-link',
      name: pod.ifName,
      up: true,
    });
  if (pod.mtu !== undefined && eth.mtu !== pod.mtu)
    b.find('pod-mtu-wrong', pod.ifName, `${pod.ifName} mtu is ${eth.mtu}, want ${pod.mtu}`, {
      op: 'link-set',
      step: 'pod-link',
      name: pod.ifName,
      mtu: pod.mtu,
    });
  // Missing addresses are added before wrong ones go: removing the last IPv4 address of an
  // interface makes the kernel flush its IPv4 routes.
  const removals: Action[] = [];
  for (const a of d.addresses) {
    if (!eth.addresses.some((x) => x.cidr === a.cidr))
      b.find('pod-address-missing', a.cidr, `${pod.ifName} lacks ${a.cidr}`, {
        op: 'addr-replace',
        step: 'pod-addresses',
        dev: pod.ifName,
        ...a,
      });
  }
  for (const x of eth.addresses) {
    if (x.scope !== SCOPE_GLOBAL || d.addresses.some((a) => a.cidr === x.cidr)) continue;
    b.find(
      'pod-address-unexpected',
      x.cidr,
      `${pod.ifName} carries ${x.cidr}, which is not the pod's`,
    );
    const del: Action = { op: 'addr-del', step: 'pod-addresses', dev: pod.ifName, cidr: x.cidr };
    // IPv6 goes first (an address may only change its prefix length by delete and add).
    if (x.family === 6) b.actions.unshift(del);
    else removals.push(del);
  }
  b.actions.push(...removals);
  for (const n of d.neighbours) {
    const have = state.neighbours.find((x) => x.dev === pod.ifName && x.ip === n.ip);
    const fix: Action = { op: 'neigh-replace', step: 'pod-neighbours', dev: pod.ifName, ...n };
    if (!have) b.find('pod-neighbour-missing', n.ip, `no neighbour entry for gateway ${n.ip}`, fix);
    else if (have.mac !== n.mac || !have.permanent)
      b.find(
        'pod-neighbour-wrong',
        n.ip,
        `gateway ${n.ip} is ${have.mac ?? 'unresolved'}${have.permanent ? '' : ' (not permanent)'}, want ${n.mac} permanent`,
        fix,
      );
  }
  diffRoutes(b, state, d.routes, 'pod');
  const loAddresses = lo?.addresses ?? [];
  for (const cidr of d.anycast) {
    if (!loAddresses.some((x) => x.cidr === cidr))
      b.find('pod-anycast-missing', cidr, `anycast ${cidr} is not on the pod's lo`, {
        op: 'addr-replace',
        step: 'pod-anycast',
        dev: 'lo',
        cidr,
      });
  }
  return { findings: b.findings, actions: byStep(b.actions) };
}
