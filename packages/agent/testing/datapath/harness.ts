// Contract harnesses: the same ContractHarness over FakeDatapath and over IprouteDatapath
// (the latter with its "node" side in a test namespace; everything it creates lives in
// namespaces the test owns and removes).
import { Netns } from '@flock/testkit';
import { HOST_SYSCTLS } from '../../src/datapath/datapath.js';
import { FakeDatapath } from './fake.js';
import { IprouteDatapath } from '../../src/datapath/iproute.js';
import { IprouteKernel, type Runner } from '../../src/datapath/iproute-kernel.js';
import type { ContractHarness } from './contract.js';

export function fakeHarness(fake = new FakeDatapath()): ContractHarness {
  return {
    datapath: fake,
    newPodNetns: () => Promise.resolve(fake.createNetns()),
    deleteNetns: (path) => Promise.resolve(fake.deleteNetns(path)),
    tamper: (ns, actions) =>
      Promise.resolve(
        ns.kind === 'host' ? fake.tamperHost(actions) : fake.tamperPod(ns.netns, actions),
      ),
  };
}

/** A node namespace plus pod namespaces, all removed by destroy(). */
export class KernelHarness implements ContractHarness {
  readonly datapath: IprouteDatapath;
  private readonly kernel: IprouteKernel;
  private readonly pods = new Map<string, Netns>();

  private constructor(
    readonly node: Netns,
    runner?: Runner,
  ) {
    const options = { hostNetns: node.path, ...(runner ? { runner } : {}) };
    this.datapath = new IprouteDatapath(options);
    this.kernel = new IprouteKernel({ hostNetns: node.path });
  }

  static async create(runner?: Runner): Promise<KernelHarness> {
    const node = await Netns.create('dpnode');
    try {
      // The node has addresses of its own, as a real node does (sources of node → pod traffic).
      await node.exec('ip', ['address', 'add', '2001:db8:ffff::1/128', 'dev', 'lo']);
      await node.exec('ip', ['address', 'add', '10.255.0.1/32', 'dev', 'lo']);
      // Forwarding on, as the agent sets it at startup (here: inside the node namespace).
      const sysctls = await new IprouteKernel({ hostNetns: node.path }).writeHostSysctls({
        ...HOST_SYSCTLS,
      });
      const failed = sysctls.filter((s) => !s.ok);
      if (failed.length) throw new Error(`node sysctls: ${JSON.stringify(failed)}`);
    } catch (e) {
      await node.destroy();
      throw e;
    }
    return new KernelHarness(node, runner);
  }

  async newPod(): Promise<Netns> {
    const ns = await Netns.create('dppod');
    this.pods.set(ns.path, ns);
    return ns;
  }

  async newPodNetns(): Promise<string> {
    return (await this.newPod()).path;
  }

  /**
   * Delete a pod namespace and wait until the kernel has destroyed it: that happens
   * asynchronously after `ip netns del`, and only then do its veths (and their host ends) go.
   */
  async deleteNetns(path: string): Promise<void> {
    const ns = this.pods.get(path);
    if (!ns) return;
    const links = JSON.parse(
      (await ns.exec('ip', ['-json', 'link', 'show', 'type', 'veth'])).stdout,
    ) as {
      link_index?: number;
    }[];
    const peers = new Set(links.map((l) => l.link_index));
    await ns.destroy();
    this.pods.delete(path);
    for (let waited = 0; waited < 5_000; waited += 20) {
      const host = JSON.parse((await this.node.exec('ip', ['-json', 'link', 'show'])).stdout) as {
        ifindex: number;
      }[];
      if (!host.some((l) => peers.has(l.ifindex))) return;
      await new Promise((r) => setTimeout(r, 20));
    }
    throw new Error(`the host ends of ${path}'s veths outlived it`);
  }

  tamper: ContractHarness['tamper'] = (ns, actions) => this.kernel.apply(ns, actions);

  async destroy(): Promise<void> {
    for (const ns of this.pods.values()) await ns.destroy();
    this.pods.clear();
    await this.node.destroy();
  }
}
