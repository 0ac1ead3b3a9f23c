// The lab's top-of-rack router: one namespace, a veth to every node, its own addresses on the
// loopback, and BIRD with one BGP session per node (multihop, over IPv6, from that address)
// that imports everything the nodes announce into the router's kernel table, each session tied
// to a BFD session with the node's BFD speaker (bfd on). IPv4 rides the
// same sessions with IPv6 next hops (extended next hop), as the nodes announce it; equal
// paths from several nodes (anycast) become one multipath route.
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { z } from 'zod';
import { BirdClient, BirdProcess, canonicalCidr, canonicalIp } from '@flock/bird';
import { Netns, vethBetween } from '@flock/testkit';
import {
  CP_ADDR4,
  CP_ADDR6,
  CP_ROUTER4,
  CP_ROUTER6,
  ROUTER_BFD,
  NODE_ASN,
  ROUTER_ASN,
  ROUTER_ID4,
  ROUTER_ID6,
  ROUTER_NS_PREFIX,
  type NodePlan,
} from './plan.js';

const IpRoutes = z.array(
  z.looseObject({
    dst: z.string(),
    gateway: z.string().optional(),
    via: z.object({ host: z.string() }).optional(),
    nexthops: z
      .array(
        z.looseObject({
          gateway: z.string().optional(),
          via: z.object({ host: z.string() }).optional(),
        }),
      )
      .optional(),
  }),
);

/** A route BIRD wrote into the router's kernel: the prefix and its next hops (sorted). */
export interface LearnedRoute {
  prefix: string;
  via: string[];
}

/** bird.conf of the router: one session per node, learned routes written to the kernel. */
export function routerBirdConfig(nodes: readonly NodePlan[]): string {
  const sessions = nodes.map(
    (n) => `protocol bgp ${n.routerIf} {
  local ${canonicalIp(ROUTER_ID6)} as ${ROUTER_ASN};
  neighbor ${canonicalIp(n.node6)} as ${NODE_ASN};
  multihop 2;
  hold time 9; keepalive time 3; connect delay time 1; connect retry time 1; error wait time 1,5;
  bfd on;
  ipv6 { import all; export none; };
  ipv4 { import all; export none; extended next hop on; igp table master6; };
}
`,
  );
  return `router id ${ROUTER_ID4};
log stderr all;
protocol device {}
# The uplinks' /64s, so that BIRD resolves the nodes' next hops (sessions are multihop).
protocol direct { ipv6; }
protocol kernel { merge paths on; ipv6 { import none; export where source = RTS_BGP; }; }
protocol kernel { merge paths on; ipv4 { import none; export where source = RTS_BGP; }; }
# BFD on every node session (multihop, from the router's loopback). The interval in force is
# the slower of the two sides': the router offers ${ROUTER_BFD.minRxIntervalMs} ms, the node's Pool decides.
protocol bfd {
  multihop { min rx interval ${ROUTER_BFD.minRxIntervalMs} ms; min tx interval ${ROUTER_BFD.minTxIntervalMs} ms; multiplier ${ROUTER_BFD.multiplier}; };
}
${sessions.join('')}`;
}

/**
 * The node's side of its link to the router: addresses and default routes (idempotent, so a
 * node whose link went down — and lost them — gets them back the same way).
 */
export async function configureUplink(
  exec: (file: string, args: string[]) => Promise<unknown>,
  plan: NodePlan,
): Promise<void> {
  await exec('ip', ['-6', 'addr', 'replace', `${plan.node6}/64`, 'dev', 'uplink', 'nodad']);
  await exec('ip', ['addr', 'replace', `${plan.node4}/30`, 'dev', 'uplink']);
  await exec('ip', ['-6', 'route', 'replace', 'default', 'via', plan.router6]);
  await exec('ip', ['route', 'replace', 'default', 'via', plan.router4]);
}

export class LabRouter {
  bird: BirdProcess | undefined;

  private constructor(
    readonly ns: Netns,
    readonly dir: string,
  ) {}

  /** The router namespace with forwarding on and its own address on the loopback. */
  static async create(dir: string): Promise<LabRouter> {
    const ns = await Netns.create(ROUTER_NS_PREFIX);
    try {
      await ns.exec('sysctl', ['-qw', 'net.ipv6.conf.all.forwarding=1']);
      await ns.exec('sysctl', ['-qw', 'net.ipv4.ip_forward=1']);
      await ns.exec('ip', ['-6', 'addr', 'add', `${ROUTER_ID6}/128`, 'dev', 'lo']);
      await ns.exec('ip', ['addr', 'add', `${ROUTER_ID4}/32`, 'dev', 'lo']);
    } catch (e) {
      await ns.destroy();
      throw e;
    }
    return new LabRouter(ns, dir);
  }

  /** Wire the control plane's namespace like a node: a veth `cp`, addresses, default routes. */
  async connectControlPlane(cp: Netns): Promise<void> {
    await vethBetween(this.ns, 'cp', cp, 'uplink');
    await this.ns.exec('ip', ['-6', 'addr', 'add', `${CP_ROUTER6}/64`, 'dev', 'cp', 'nodad']);
    await this.ns.exec('ip', ['addr', 'add', `${CP_ROUTER4}/30`, 'dev', 'cp']);
    await cp.exec('ip', ['-6', 'addr', 'add', `${CP_ADDR6}/64`, 'dev', 'uplink', 'nodad']);
    await cp.exec('ip', ['addr', 'add', `${CP_ADDR4}/30`, 'dev', 'uplink']);
    await cp.exec('ip', ['-6', 'route', 'add', 'default', 'via', CP_ROUTER6]);
    await cp.exec('ip', ['route', 'add', 'default', 'via', CP_ROUTER4]);
  }

  /** Wire one node: a veth, the link /64 (and /30) on both ends, the node's default routes. */
  async connect(node: Netns, plan: NodePlan): Promise<void> {
    await vethBetween(this.ns, plan.routerIf, node, 'uplink');
    await this.ns.exec('ip', [
      '-6',
      'addr',
      'add',
      `${plan.router6}/64`,
      'dev',
      plan.routerIf,
      'nodad',
    ]);
    await this.ns.exec('ip', ['addr', 'add', `${plan.router4}/30`, 'dev', plan.routerIf]);
    await configureUplink((f, a) => node.exec(f, a), plan);
  }

  async startBird(nodes: readonly NodePlan[]): Promise<void> {
    const paths = {
      configPath: join(this.dir, 'router.conf'),
      socketPath: join(this.dir, 'router.ctl'),
      pidPath: join(this.dir, 'router.pid'),
    };
    await writeFile(paths.configPath, routerBirdConfig(nodes));
    this.bird = await BirdProcess.start((f, a) => this.ns.spawn(f, a), paths);
  }

  /** Routes BIRD wrote into the router's kernel tables (IPv6 first), canonical and sorted. */
  async routes(): Promise<LearnedRoute[]> {
    const out: LearnedRoute[] = [];
    for (const family of ['-6', '-4']) {
      const { stdout } = await this.ns.exec('ip', ['-j', family, 'route', 'show', 'proto', 'bird']);
      for (const r of IpRoutes.parse(JSON.parse(stdout))) {
        const host = family === '-6' ? '/128' : '/32';
        const hops = r.nexthops ?? [r];
        out.push({
          prefix: canonicalCidr(r.dst.includes('/') ? r.dst : `${r.dst}${host}`),
          via: hops
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

  /** BGP state of each node session (`node1` → `Established`, `Active`, ...). */
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

  /** Is a node session Established with no graceful restart still pending (End-of-RIB seen)? */
  async recovered(protocol: string): Promise<boolean> {
    const reply = await this.client().command(`show protocols all ${protocol}`);
    const text = reply.lines.map((l) => l.text).join('\n');
    return /BGP state:\s+Established/.test(text) && !/Neighbor graceful restart active/.test(text);
  }

  private client(): BirdClient {
    if (!this.bird) throw new Error('the router BIRD is not running');
    return new BirdClient({ socketPath: this.bird.paths.socketPath, attempts: 3 });
  }

  /** Record every route change in the router's kernel (`ip monitor route`) until stopped. */
  monitorRoutes(ipOptions: string[] = []): { lines: string[]; stop: () => void } {
    const child = this.ns.spawn('ip', [...ipOptions, 'monitor', 'route']);
    const lines: string[] = [];
    child.stdout?.on('data', (d: Buffer) =>
      lines.push(...d.toString().split('\n').filter(Boolean)),
    );
    return { lines, stop: () => void child.kill() };
  }

  async destroy(): Promise<void> {
    await this.bird?.stop();
    this.bird = undefined;
    await this.ns.destroy();
  }
}
