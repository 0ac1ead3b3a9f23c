// The lab's top-of-rack router: @flock/bird's TestRouter (BIRD in a namespace, what it learned,
// sessions, BFD) wired the lab's way: its own addresses on the loopback, a veth to every node,
// and BIRD with one BGP session per node (multihop, over IPv6, from that address) that imports
// everything the nodes announce into the router's kernel table, each session tied to a BFD
// session with the node's BFD speaker (bfd on). IPv4 rides the same sessions with IPv6 next
// hops (extended next hop), as the nodes announce it; equal paths from several nodes (anycast)
// become one multipath route.
import { canonicalIp } from '@flock/bird';
import { TestRouter } from '@flock/bird/testing';
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

export class LabRouter extends TestRouter {
  /** The router namespace with forwarding on and its own address on the loopback. */
  static async open(dir: string): Promise<LabRouter> {
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
}
