// Test infrastructure (not shipped): a top-of-rack router for one simulated node — a network
// namespace joined to the node's namespace by a veth, running BIRD with a BGP session to the
// node that imports everything (IPv6, and IPv4 with extended next hop over the same IPv6
// session) and writes it into the router's kernel tables, where the tests read what the node
// announces. Used by the agent's kernel and cluster tests and the lab.
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { BirdClient, BirdProcess, canonicalCidr, canonicalIp, type BirdPaths } from '@flock/bird';
import { Netns, vethBetween } from '@flock/testkit';
import { z } from 'zod';

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

const SAFE_PASSWORD = /^[\x20-\x21\x23-\x5b\x5d-\x7e]{1,80}$/;
const IpRoutes = z.array(z.object({ dst: z.string() }));

/** The router's bird.conf: learn everything from the node, write it into the kernel. */
export function routerBirdConfig(o: {
  routerAs: number;
  nodeAs: number;
  node6: string;
  password?: string;
  extraConfig?: string;
}): string {
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

export class TestRouter {
  readonly paths: BirdPaths;
  bird: BirdProcess | undefined;

  private constructor(
    readonly ns: Netns,
    readonly options: TestRouterOptions,
  ) {
    this.paths = {
      configPath: join(options.dir, 'router.conf'),
      socketPath: join(options.dir, 'router.ctl'),
      pidPath: join(options.dir, 'router.pid'),
    };
  }

  /** Create the router namespace, the link to the node, and the router's config. */
  static async create(options: TestRouterOptions): Promise<TestRouter> {
    const ns = await Netns.create('tor');
    const router = new TestRouter(ns, options);
    try {
      const routerIf = options.routerIf ?? 'vtor';
      const nodeIf = options.nodeIf ?? 'uplink';
      await vethBetween(ns, routerIf, options.node, nodeIf);
      await ns.exec('ip', ['-6', 'addr', 'add', `${router.router6}/64`, 'dev', routerIf, 'nodad']);
      await options.node.exec('ip', [
        '-6',
        'addr',
        'add',
        `${router.node6}/64`,
        'dev',
        nodeIf,
        'nodad',
      ]);
      await writeFile(
        router.paths.configPath,
        routerBirdConfig({
          routerAs: options.routerAs,
          nodeAs: options.nodeAs,
          node6: router.node6,
          ...(options.password === undefined ? {} : { password: options.password }),
          ...(options.extraConfig === undefined ? {} : { extraConfig: options.extraConfig }),
        }),
      );
    } catch (e) {
      await ns.destroy();
      throw e;
    }
    return router;
  }

  get router6(): string {
    return this.options.router6 ?? '2001:db8:ffff::1';
  }

  get node6(): string {
    return this.options.node6 ?? '2001:db8:ffff::2';
  }

  async startBird(): Promise<void> {
    this.bird = await BirdProcess.start((f, a) => this.ns.spawn(f, a), this.paths);
  }

  async stopBird(): Promise<void> {
    await this.bird?.stop();
    this.bird = undefined;
  }

  /** Prefixes BIRD wrote into the router's kernel tables, canonical and sorted. */
  async learned(): Promise<string[]> {
    const found: string[] = [];
    for (const [flag, hostLength] of [
      ['-6', 128],
      ['-4', 32],
    ] as const) {
      const { stdout } = await this.ns.exec('ip', ['-j', flag, 'route', 'show', 'proto', 'bird']);
      for (const { dst } of IpRoutes.parse(JSON.parse(stdout)))
        found.push(canonicalCidr(dst.includes('/') ? dst : `${dst}/${hostLength}`));
    }
    return found.sort();
  }

  /** Every route the router's BIRD holds, with its BGP attributes (`show route all`). */
  async routesAll(): Promise<RouterRoute[]> {
    const client = new BirdClient({ socketPath: this.paths.socketPath, attempts: 1 });
    return parseRoutesAll((await client.command('show route all')).lines);
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

  async destroy(): Promise<void> {
    await this.stopBird();
    await this.ns.destroy();
  }
}

/** Where a node's BIRD keeps its config, control socket and pid file inside a test directory. */
export function nodeBirdPaths(dir: string): BirdPaths {
  return {
    configPath: join(dir, 'bird.conf'),
    socketPath: join(dir, 'bird.ctl'),
    pidPath: join(dir, 'bird.pid'),
  };
}

/** Start the node's BIRD inside the node namespace (its config file must exist). */
export function startNodeBird(node: Netns, paths: BirdPaths): Promise<BirdProcess> {
  return BirdProcess.start((f, a) => node.spawn(f, a), paths);
}
