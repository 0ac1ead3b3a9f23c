// An in-memory kernel for unit tests: namespaces with links, addresses, main-table routes and
// neighbours, changed by the same actions the real kernel gets, with the kernel's side
// effects that the datapath can observe (a veth dies with its peer and its namespace, routes
// die with their device, a link going down loses its IPv6 addresses and routes, the last IPv4
// address takes the IPv4 routes with it). Failures can be injected at a named step.
import type { Family } from '@flock/api';
import { ApplyError, NetnsMissingError, type Kernel } from '../../src/datapath/kernel.js';
import {
  SCOPE_GLOBAL,
  SCOPE_HOST,
  SCOPE_LINK,
  defaultMetric,
  familyOfCidr,
  type Action,
  type NsLink,
  type NsRef,
  type NsRoute,
  type NsState,
  type ReadQuery,
} from '../../src/datapath/model.js';
import type { DatapathStep, SysctlResult } from '../../src/datapath/types.js';

interface MemLink extends NsLink {
  peer?: { ns: string; name: string };
}

interface MemNs {
  links: MemLink[];
  routes: NsRoute[];
  neighbours: NsState['neighbours'];
  nextIfindex: number;
}

/** An error of the kind the kernel returns (errno name kept for `exists`). */
class KernelFault extends Error {
  constructor(
    readonly errno:
      'EEXIST' | 'ENODEV' | 'EADDRNOTAVAIL' | 'ESRCH' | 'ENETDOWN' | 'EINVAL' | 'ENOENT',
    message: string,
  ) {
    super(message);
  }
}

const HOST_KEY = 'host';
const keyOf = (ns: NsRef) => (ns.kind === 'host' ? HOST_KEY : ns.netns);
const clone = <T>(x: T): T => structuredClone(x);

/** Host sysctls the in-memory kernel knows, with the kernel's defaults. */
const SYSCTL_DEFAULTS: Record<string, string> = {
  'net.ipv4.ip_forward': '0',
  'net.ipv6.conf.all.forwarding': '0',
  'net.ipv4.fib_multipath_hash_policy': '0',
  'net.ipv6.fib_multipath_hash_policy': '0',
};

const PER_LINK_SYSCTL = /^net\.(ipv4|ipv6)\.conf\.([^.]+)\.(\w+)$/;
const PER_LINK_DEFAULTS: Record<string, string> = {
  accept_ra: '1',
  accept_redirects: '1',
  rp_filter: '0',
};

export interface AppliedAction {
  ns: string;
  action: Action;
}

export class MemoryKernel implements Kernel {
  private readonly namespaces = new Map<string, MemNs>();
  private readonly failures = new Map<DatapathStep, { message: string; times: number }>();
  readonly sysctls: Record<string, string> = { ...SYSCTL_DEFAULTS };
  /** Sysctls written (one that already had its value is not written). */
  sysctlWrites = 0;
  /** Every action applied through apply/applyAll, in order (tests count writes with it). */
  readonly applied: AppliedAction[] = [];
  reads = 0;

  constructor() {
    this.namespaces.set(HOST_KEY, MemoryKernel.newNs(true));
  }

  private static newNs(loUp: boolean): MemNs {
    const ns: MemNs = { links: [], routes: [], neighbours: [], nextIfindex: 2 };
    ns.links.push({
      name: 'lo',
      ifindex: 1,
      mac: '00:00:00:00:00:00',
      up: false,
      mtu: 65536,
      addresses: [],
    });
    if (loUp) MemoryKernel.setUp(ns.links[0] as MemLink);
    return ns;
  }

  private static setUp(link: MemLink): void {
    link.up = true;
    if (link.name === 'lo' && !link.addresses.length)
      link.addresses.push(
        { cidr: '127.0.0.1/8', family: 4, scope: SCOPE_HOST, nodad: false },
        { cidr: '::1/128', family: 6, scope: SCOPE_HOST, nodad: false },
      );
  }

  hasNetns(path: string): boolean {
    return this.namespaces.has(path);
  }

  /** Create a pod namespace at this path (its lo down, as a runtime hands it over). */
  addNetns(path: string): void {
    if (this.namespaces.has(path)) throw new Error(`netns ${path} exists`);
    this.namespaces.set(path, MemoryKernel.newNs(false));
  }

  /** Delete a namespace: its veths die, and with them their peers and their routes. */
  deleteNetns(path: string): void {
    const ns = this.namespaces.get(path);
    if (!ns) return;
    for (const link of [...ns.links])
      if (link.peer) this.deleteLink(link.peer.ns, link.peer.name, false);
    this.namespaces.delete(path);
  }

  /** Make the next `times` actions of `step` fail. */
  failAt(step: DatapathStep, message = `injected failure at ${step}`, times = 1): void {
    this.failures.set(step, { message, times });
  }

  /** The whole state of a namespace, as a copy. */
  snapshot(ns: NsRef): NsState {
    const s = this.ns(ns);
    return clone({
      links: s.links.map(({ peer: _peer, ...l }) => l),
      routes: s.routes,
      neighbours: s.neighbours,
    });
  }

  /** Change the kernel by hand (what an admin or a pod would do): no injection, not logged. */
  tamper(ns: NsRef, actions: Action[]): void {
    for (const a of actions) this.applyOne(keyOf(ns), a);
  }

  private ns(ref: NsRef | string): MemNs {
    const key = typeof ref === 'string' ? ref : keyOf(ref);
    const ns = this.namespaces.get(key);
    if (!ns) throw new NetnsMissingError(key);
    return ns;
  }

  async netnsExists(ns: NsRef): Promise<boolean> {
    return this.namespaces.has(keyOf(ns));
  }

  async read(ref: NsRef, q: ReadQuery): Promise<NsState> {
    this.reads++;
    const s = this.snapshot(ref);
    const links =
      q.links === undefined
        ? []
        : q.links === 'all'
          ? s.links
          : 'names' in q.links
            ? s.links.filter((l) => (q.links as { names: string[] }).names.includes(l.name))
            : s.links.filter((l) => l.kind === 'veth');
    const want = q.routes;
    const routes =
      want === undefined
        ? []
        : want === 'all'
          ? s.routes
          : s.routes.filter((r) => want.protos?.includes(r.proto) || want.exact?.includes(r.dst));
    return { links, routes, neighbours: q.neighbours ? s.neighbours : [] };
  }

  async apply(ref: NsRef, actions: Action[]): Promise<void> {
    for (const [i, a] of actions.entries()) {
      const failure = this.run(ref, a, i);
      if (failure) throw failure;
    }
  }

  async applyAll(ref: NsRef, actions: Action[]): Promise<ApplyError[]> {
    return actions.flatMap((a, i) => this.run(ref, a, i) ?? []);
  }

  private run(ref: NsRef, a: Action, index: number): ApplyError | undefined {
    const injected = this.failures.get(a.step);
    if (injected) {
      if (--injected.times <= 0) this.failures.delete(a.step);
      return new ApplyError(a.step, index, false, injected.message);
    }
    try {
      this.applyOne(keyOf(ref), a);
      this.applied.push({ ns: keyOf(ref), action: clone(a) });
      return undefined;
    } catch (e) {
      if (e instanceof NetnsMissingError) return new ApplyError(a.step, index, false, e.message);
      if (!(e instanceof KernelFault)) throw e;
      return new ApplyError(
        a.step,
        index,
        e.errno === 'EEXIST',
        `${a.op}: ${e.errno}: ${e.message}`,
      );
    }
  }

  async writeHostSysctls(values: Record<string, string>): Promise<SysctlResult[]> {
    return Object.entries(values).map(([key, value]) => {
      // An interface's keys exist while the interface does (with the kernel's defaults).
      const perLink = PER_LINK_SYSCTL.exec(key);
      if (
        perLink &&
        !(key in this.sysctls) &&
        this.ns(HOST_KEY).links.some((l) => l.name === perLink[2])
      )
        this.sysctls[key] = PER_LINK_DEFAULTS[perLink[3] as string] ?? '0';
      if (!(key in this.sysctls))
        return {
          key,
          value,
          ok: false,
          changed: false,
          error: `cannot stat /proc/sys/${key.replaceAll('.', '/')}`,
        };
      const changed = this.sysctls[key] !== value;
      if (changed) {
        this.sysctls[key] = value;
        this.sysctlWrites++;
      }
      return { key, value, ok: true, changed };
    });
  }

  private link(ns: MemNs, name: string): MemLink {
    const link = ns.links.find((l) => l.name === name);
    if (!link) throw new KernelFault('ENODEV', `Cannot find device "${name}"`);
    return link;
  }

  private applyOne(key: string, a: Action): void {
    const ns = this.ns(key);
    switch (a.op) {
      case 'veth-add': {
        if (ns.links.some((l) => l.name === a.name)) throw new KernelFault('EEXIST', 'File exists');
        const peerNs = this.namespaces.get(a.peer.netns);
        if (!peerNs) throw new KernelFault('ENOENT', `Invalid "netns" value ${a.peer.netns}`);
        if (peerNs.links.some((l) => l.name === a.peer.name))
          throw new KernelFault('EEXIST', 'File exists');
        const mine = ns.nextIfindex++;
        const theirs = peerNs.nextIfindex++;
        const base = { kind: 'veth', up: false, mtu: a.mtu ?? 1500 };
        ns.links.push({
          ...base,
          name: a.name,
          ifindex: mine,
          addresses: [],
          mac: a.mac,
          peerIfindex: theirs,
          peer: { ns: a.peer.netns, name: a.peer.name },
        });
        peerNs.links.push({
          ...base,
          name: a.peer.name,
          ifindex: theirs,
          addresses: [],
          mac: a.peer.mac,
          peerIfindex: mine,
          peer: { ns: key, name: a.name },
        });
        return;
      }
      case 'link-set': {
        const link = this.link(ns, a.name);
        if (a.mtu !== undefined) link.mtu = a.mtu;
        if (a.up === true) MemoryKernel.setUp(link);
        if (a.up === false && link.up) this.linkDown(ns, link);
        return;
      }
      case 'link-del':
        this.link(ns, a.name);
        this.deleteLink(key, a.name, true);
        return;
      case 'addr-replace': {
        const link = this.link(ns, a.dev);
        const family = familyOfCidr(a.cidr);
        const scope =
          a.scope === 'host' ? SCOPE_HOST : a.cidr.startsWith('fe80:') ? SCOPE_LINK : SCOPE_GLOBAL;
        const same = (c: string) =>
          family === 6 ? c.split('/')[0] === a.cidr.split('/')[0] : c === a.cidr;
        const existing = link.addresses.find((x) => x.family === family && same(x.cidr));
        if (existing) Object.assign(existing, { scope, nodad: a.nodad === true });
        else link.addresses.push({ cidr: a.cidr, family, scope, nodad: a.nodad === true });
        return;
      }
      case 'addr-del': {
        const link = this.link(ns, a.dev);
        const at = link.addresses.findIndex((x) => x.cidr === a.cidr);
        if (at < 0) throw new KernelFault('EADDRNOTAVAIL', 'Cannot assign requested address');
        const [gone] = link.addresses.splice(at, 1);
        // The last IPv4 address leaving an interface disables IPv4 on it: its routes go.
        if (gone?.family === 4 && !link.addresses.some((x) => x.family === 4))
          this.dropRoutesVia(ns, link.name, 4, 'all');
        return;
      }
      case 'neigh-replace': {
        this.link(ns, a.dev);
        ns.neighbours = ns.neighbours.filter((n) => !(n.dev === a.dev && n.ip === a.ip));
        ns.neighbours.push({ dev: a.dev, ip: a.ip, mac: a.mac, permanent: true });
        return;
      }
      case 'route-replace':
        return this.replaceRoute(ns, a.route);
      case 'route-del': {
        const at = ns.routes.findIndex(
          (r) =>
            r.dst === a.route.dst &&
            r.proto === a.route.proto &&
            (a.route.type !== 'blackhole' || r.type === 'blackhole'),
        );
        if (at < 0) throw new KernelFault('ESRCH', 'No such process');
        ns.routes.splice(at, 1);
        return;
      }
    }
  }

  private replaceRoute(ns: MemNs, spec: Extract<Action, { op: 'route-replace' }>['route']): void {
    const family = familyOfCidr(spec.dst);
    if (family === 6 && spec.nexthops.length > 1 && spec.nexthops.some((n) => !n.gateway))
      throw new KernelFault(
        'EINVAL',
        'Device only routes can not be added for IPv6 using the multipath API.',
      );
    for (const n of spec.nexthops) {
      const link = this.link(ns, n.dev);
      if (family === 4 && !link.up) throw new KernelFault('ENETDOWN', 'Network is down');
    }
    const metric = defaultMetric(family);
    const route: NsRoute = {
      dst: spec.dst,
      family,
      type: spec.type,
      proto: spec.proto,
      metric,
      nexthops: clone(spec.nexthops),
    };
    const at = ns.routes.findIndex((r) => r.dst === spec.dst && r.metric === metric);
    if (at >= 0) ns.routes[at] = route;
    else ns.routes.push(route);
  }

  /**
   * Routes through a device that is going away ('unregister': IPv4 loses every route that uses
   * it, IPv6 only the nexthop) or going down ('down': plain routes go, a multipath route only
   * when all its devices are down), for one family or both.
   */
  private dropRoutesVia(
    ns: MemNs,
    dev: string,
    family: Family | 'both',
    event: 'all' | 'unregister' | 'down',
  ): void {
    const isDown = (d: string) => d === dev || ns.links.find((l) => l.name === d)?.up === false;
    ns.routes = ns.routes.flatMap((r) => {
      if ((family !== 'both' && r.family !== family) || !r.nexthops.some((n) => n.dev === dev))
        return [r];
      if (event === 'all' || r.nexthops.length === 1) return [];
      if (event === 'down') return r.nexthops.every((n) => isDown(n.dev)) ? [] : [r];
      if (r.family === 4) return [];
      const left = r.nexthops.filter((n) => n.dev !== dev);
      return left.length ? [{ ...r, nexthops: left }] : [];
    });
  }

  private linkDown(ns: MemNs, link: MemLink): void {
    link.up = false;
    link.addresses = link.addresses.filter((a) => a.family === 4);
    ns.neighbours = ns.neighbours.filter((n) => n.dev !== link.name);
    this.dropRoutesVia(ns, link.name, 'both', 'down');
  }

  private deleteLink(key: string, name: string, withPeer: boolean): void {
    const ns = this.namespaces.get(key);
    const link = ns?.links.find((l) => l.name === name);
    if (!ns || !link) return;
    ns.links = ns.links.filter((l) => l !== link);
    ns.neighbours = ns.neighbours.filter((n) => n.dev !== name);
    this.dropRoutesVia(ns, name, 'both', 'unregister');
    if (withPeer && link.peer) this.deleteLink(link.peer.ns, link.peer.name, false);
  }
}
