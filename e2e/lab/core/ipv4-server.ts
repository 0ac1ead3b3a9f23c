// An IPv4-only server beside the lab's router: a namespace of its own with IPv6 switched off,
// on a veth to the router (IPV4_SERVER's /24), answering HTTP GETs on port 80 with the address
// the request came from, so a test sees what source reached it (a pod's own, or its node's after
// NAT64 and the masquerade). The cluster DNS names it (core/dns.ts).
import type { ChildProcess } from 'node:child_process';
import { Netns, vethBetween } from '@flock/testkit';
import { IPV4_SERVER, LAB_PREFIX } from './plan.js';
import type { LabRouter } from './router.js';

/** The server: every answer is the peer's address (IPv4-mapped forms stripped). */
const SERVER = `
require('node:http')
  .createServer((req, res) => res.end(String(req.socket.remoteAddress).replace(/^::ffff:/, '')))
  .listen({ host: '0.0.0.0', port: 80 }, () => console.log('ready'));
`;

export class Ipv4OnlyServer {
  private constructor(
    readonly ns: Netns,
    private readonly child: ChildProcess,
  ) {}

  static async start(router: LabRouter): Promise<Ipv4OnlyServer> {
    const ns = await Netns.create(`${LAB_PREFIX}v4s`);
    try {
      for (const key of ['all', 'default', 'lo'])
        await ns.exec('sysctl', ['-qw', `net.ipv6.conf.${key}.disable_ipv6=1`]);
      await vethBetween(router.ns, 'v4srv', ns, 'eth0');
      const len = IPV4_SERVER.prefixLength;
      await router.ns.exec('ip', ['addr', 'add', `${IPV4_SERVER.router}/${len}`, 'dev', 'v4srv']);
      await ns.exec('ip', ['addr', 'add', `${IPV4_SERVER.address}/${len}`, 'dev', 'eth0']);
      await ns.exec('ip', ['route', 'add', 'default', 'via', IPV4_SERVER.router]);
      const child = ns.spawn(process.execPath, ['-e', SERVER]);
      await new Promise<void>((resolve, reject) => {
        child.once('exit', (code) => reject(new Error(`the IPv4-only server exited (${code})`)));
        child.stdout?.once('data', () => resolve());
      });
      return new Ipv4OnlyServer(ns, child);
    } catch (e) {
      await ns.destroy();
      throw e;
    }
  }

  async stop(): Promise<void> {
    this.child.kill('SIGKILL');
    await this.ns.destroy();
  }
}
