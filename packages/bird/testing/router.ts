// The test router: a network namespace running BIRD that learns what flock's nodes announce and
// writes it into its own kernel tables, where tests read it (prefixes, next hops, BGP attributes,
// session and BFD state). One class for the agent's kernel and cluster tests, which peer one node
// with it (TestRouter.create: a veth, a /64, one BGP session; IPv4 with extended next hop over
// the IPv6 session), and the lab, which wires the namespace itself (its LabRouter extends this
// class: loopback addresses, a veth per node, multihop sessions with BFD).
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { z } from 'zod';
import { BirdClient } from '../src/client.js';
import { canonicalCidr, canonicalIp } from '../src/model.js';
import { Netns, vethBetween } from '@flock/testkit';
import { BirdProcess, type BirdPaths } from './bird-process.js';

/** A router peering with one node (TestRouter.create). */
export interface TestRouterOptions {
  /** The node's namespace; gets `nodeIf` with `node6`/64. */
  node: Netns;
  /** Where the router's config, control socket and pid file go. */
  dir: string;
  routerAs: number;
  nodeAs: number;
  /** Link addresses (a /64 between them). Default 2001:db8:ffff::1 and ::2. */
  router6?: string;
  node6?: string;
  /** Interface names (default vtor in the router, uplink in the node). */
  routerIf?: string;
  nodeIf?: string;
  password?: string;
  /** Appended to the router's bird.conf (more sessions, BFD, ...). */
  extraConfig?: string;
}

/** One route of the router's `show route all`: its prefix, protocol and attributes. */
export interface RouterRoute {
  prefix: string;
  protocol: string;
  /** "BGP.community" → "(64512,100) (64512,200)", as BIRD prints them. */
  attributes: Record<string, string>;
}

/** A route BIRD wrote into the router's kernel: the prefix and its next hops (sorted). */
export interface LearnedRoute {
  prefix: string;
  via: string[];
}

const SAFE_PASSWORD = /^[\x20-\x21\x23-\x5b\x5d-\x7e]{1,80}$/;
const Hop = { gateway: z.string().optional(), via: z.object({ host: z.string() }).optional() };
const IpRoutes = z.array(
  z.looseObject({ dst: z.string(), ...Hop, nexthops: z.array(z.looseObject(Hop)).optional() }),
);

/** bird.conf of a one-node router: learn everything from the node, write it into the kernel. */
function peerConfig(o: TestRouterOptions & { node6: string }): string {
  if (o.password !== undefined && !SAFE_PASSWORD.test(o.password))
    throw new Error('router password: printable ASCII without " or \\, at most 80 bytes');
  return `router id 203.0.113.254;
log stderr all;
protocol device {}
protocol kernel { ipv6 { import none; export all; }; }
protocol kernel { ipv4 { import none; export all; }; }
protocol bgp node {
  local as ${o.routerAs};
  neighbor ${canonicalIp(o.node6)} as ${o.nodeAs};
  direct;
  hold time 9; keepalive time 3; connect delay time 1; connect retry time 1; error wait time 1,5;
${o.password === undefined ? '' : `  password "${o.password}";\n`}  ipv6 { import all; export none; };
  ipv4 { import all; export none; extended next hop on; };
}
${o.extraConfig ?? ''}`;
}

// "2001:db8::/64        unicast [node 12:00:00.000] * (100) [AS64512i]"; a further route of
// the same prefix starts with blanks instead of the prefix.
const ROUTE_LINE = /^(\S+)?\s+(?:unicast|blackhole|unreachable|prohibited)\s+\[(\S+)/;
const ATTRIBUTE_LINE = /^\s*([A-Za-z][\w.]*):\s*(.*)$/;

/** The routes of a `show route all` reply, with their attributes. */
export function parseRoutesAll(lines: readonly { text: string }[]): RouterRoute[] {
  const routes: RouterRoute[] = [];
  let prefix = '';
  for (const { text } of lines) {
    const route = ROUTE_LINE.exec(text);
    if (route?.[2]) {
      prefix = route[1] ?? prefix;
      routes.push({ prefix, protocol: route[2], attributes: {} });
      continue;
    }
    const attribute = ATTRIBUTE_LINE.exec(text);
    const current = routes.at(-1);
    if (attribute?.[1] && current) current.attributes[attribute[1]] = attribute[2] ?? '';
  }
  return routes;
}

/** Where a BIRD keeps its config, control socket and pid file: `<dir>/<name>.conf|ctl|pid`. */
export function birdPaths(dir: string, name: string): BirdPaths {
  return {
    configPath: join(dir, `${name}.conf`),
    socketPath: join(dir, `${name}.ctl`),
    pidPath: join(dir, `${name}.pid`),
  };
}

/** Where a node's BIRD keeps its config, control socket and pid file inside a test directory. */
export const nodeBirdPaths = (dir: string): BirdPaths => birdPaths(dir, 'bird');

/** Start the node's BIRD inside the node namespace (its config file must exist). */
export function startNodeBird(node: Netns, paths: BirdPaths): Promise<BirdProcess> {
  return BirdProcess.start((f, a) => node.spawn(f, a), paths);
}

export class TestRouter {
  readonly paths: BirdPaths;
  bird: BirdProcess | undefined;
  private link: { router6: string; node6: string } | undefined;

  /** A router in `ns` (its links and addresses are the caller's), files under `dir`. */
  protected constructor(
    readonly ns: Netns,
    readonly dir: string,
  ) {
    this.paths = birdPaths(dir, 'router');
  }

  /** A router peering with one node: the namespace, the link to the node, the router's config. */
  static async create(options: TestRouterOptions): Promise<TestRouter> {
    const ns = await Netns.create('tor');
    const router = new TestRouter(ns, options.dir);
    const link = {
      router6: options.router6 ?? '2001:db8:ffff::1',
      node6: options.node6 ?? '2001:db8:ffff::2',
    };
    router.link = link;
    try {
      const routerIf = options.routerIf ?? 'vtor';
      const nodeIf = options.nodeIf ?? 'uplink';
      await vethBetween(ns, routerIf, options.node, nodeIf);
      await ns.exec('ip', ['-6', 'addr', 'add', `${link.router6}/64`, 'dev', routerIf, 'nodad']);
      const node6 = ['-6', 'addr', 'add', `${link.node6}/64`, 'dev', nodeIf, 'nodad'];
      await options.node.exec('ip', node6);
      await writeFile(router.paths.configPath, peerConfig({ ...options, node6: link.node6 }));
    } catch (e) {
      await ns.destroy();
      throw e;
    }
    return router;
  }

  /** The router's end of the link to its one node (TestRouter.create). */
  get router6(): string {
    return this.oneNode().router6;
  }

  /** The node's end of that link. */
  get node6(): string {
    return this.oneNode().node6;
  }

  private oneNode(): { router6: string; node6: string } {
    if (!this.link) throw new Error('not a one-node router (TestRouter.create)');
    return this.link;
  }

  /** Start BIRD in the namespace, first writing `config` as its bird.conf when given. */
  async startBird(config?: string): Promise<void> {
    if (config !== undefined) await writeFile(this.paths.configPath, config);
    this.bird = await BirdProcess.start((f, a) => this.ns.spawn(f, a), this.paths);
  }

  async stopBird(): Promise<void> {
    await this.bird?.stop();
    this.bird = undefined;
  }

  /** Routes BIRD wrote into the router's kernel tables (IPv6 first), canonical and sorted. */
  async routes(): Promise<LearnedRoute[]> {
    const out: LearnedRoute[] = [];
    for (const family of ['-6', '-4']) {
      const { stdout } = await this.ns.exec('ip', ['-j', family, 'route', 'show', 'proto', 'bird']);
      for (const r of IpRoutes.parse(JSON.parse(stdout))) {
        const host = family === '-6' ? '/128' : '/32';
        out.push({
          prefix: canonicalCidr(r.dst.includes('/') ? r.dst : `${r.dst}${host}`),
          via: (r.nexthops ?? [r])
            .map((h) => h.gateway ?? h.via?.host)
            .filter((g): g is string => g !== undefined)
            .map((g) => canonicalIp(g))
            .sort(),
        });
      }
    }
    return out.sort((a, b) => a.prefix.localeCompare(b.prefix));
  }

  /** Prefixes BIRD wrote into the router's kernel tables, canonical and sorted. */
  async learned(): Promise<string[]> {
    return (await this.routes()).map((r) => r.prefix);
  }

  /** The next hops of one learned prefix ([] when the router has no route for it). */
  async nextHops(prefix: string): Promise<string[]> {
    const want = canonicalCidr(prefix);
    return (await this.routes()).find((r) => r.prefix === want)?.via ?? [];
  }

  /** Poll until `predicate(learned)` holds; returns the last table (check it in the test). */
  async waitFor(predicate: (learned: string[]) => boolean, timeoutMs = 30_000): Promise<string[]> {
    const deadline = Date.now() + timeoutMs;
    let got = await this.learned();
    while (!predicate(got) && Date.now() < deadline) {
      await new Promise((r) => setTimeout(r, 100));
      got = await this.learned();
    }
    return got;
  }

  /** Every route the router's BIRD holds, with its BGP attributes (`show route all`). */
  async routesAll(): Promise<RouterRoute[]> {
    return parseRoutesAll((await this.client(1).command('show route all')).lines);
  }

  /** BGP state of each session (`node1` → `Established`, `Active`, ...). */
  async sessions(): Promise<Map<string, string>> {
    const rows = await this.client().showProtocols();
    return new Map(
      rows.filter((r) => r.proto === 'BGP').map((r) => [r.name, r.info.split(/\s+/)[0] ?? '']),
    );
  }

  /** The router's BFD session with one node (`Up`, `Down`, ...; undefined: none). */
  async bfdState(nodeAddress: string): Promise<string | undefined> {
    const want = canonicalIp(nodeAddress);
    const sessions = await this.client().showBfdSessions();
    return sessions.find((s) => canonicalIp(s.address) === want)?.state;
  }

  /** Is a session Established with no graceful restart still pending (End-of-RIB seen)? */
  async recovered(protocol: string): Promise<boolean> {
    const reply = await this.client().command(`show protocols all ${protocol}`);
    const text = reply.lines.map((l) => l.text).join('\n');
    return /BGP state:\s+Established/.test(text) && !/Neighbor graceful restart active/.test(text);
  }

  /** Record every route change in the router's kernel (`ip monitor route`) until stopped. */
  monitorRoutes(ipOptions: string[] = []): { lines: string[]; stop: () => void } {
    const child = this.ns.spawn('ip', [...ipOptions, 'monitor', 'route']);
    const lines: string[] = [];
    // By line: a chunk of the pipe may end inside one.
    if (child.stdout)
      createInterface({ input: child.stdout }).on('line', (l) => void (l && lines.push(l)));
    return { lines, stop: () => void child.kill() };
  }

  async destroy(): Promise<void> {
    await this.stopBird();
    await this.ns.destroy();
  }

  private client(attempts = 3): BirdClient {
    if (!this.bird) throw new Error('the router BIRD is not running');
    return new BirdClient({ socketPath: this.paths.socketPath, attempts });
  }
}
