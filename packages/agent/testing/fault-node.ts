// Test infrastructure: one simulated node for the fault suite — a real API server,
// the node's namespace, the real agent process (its API traffic through a TCP proxy the tests
// can silence), the real CNI plugin via cnitool, and optionally a router BIRD peering with the
// node's BIRD. Plus what every fault scenario needs: pods, NodeConfig status, CNI error codes,
// and the time-to-converge figures.
import { appendFile, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { NodeConfig, type NodeConfigSpec } from '@flock/api';
import { nodeConfig } from '@flock/api/testing';
import { NODECONFIGS, NODES, PODS, objectPath, type HttpTransport } from '@flock/kube';
import {
  Netns,
  eventually,
  requireKernelTier,
  startTcpProxy,
  type ControlPlane,
  type TcpProxy,
} from '@flock/testkit';
import { invokePlugin } from './plugin-process.js';
import { NETWORK_NAME, TestNode } from './node-harness.js';
import { TestRouter, nodeBirdPaths, startNodeBird, type BirdProcess } from '@flock/bird/testing';
import { createTestPod, startTestCluster, type TestCluster } from './test-cluster.js';

export interface PodHandle {
  name: string;
  uid: string;
  ns: Netns;
  who: { namespace: string; name: string; uid: string };
}

export interface FaultNodeOptions {
  nodeName: string;
  /**
   * The NodeConfig spec, over nodeConfig()'s (pool dc1, cidr6 2001:db8:100::/64, ASN 64512, no
   * peers); applied before the agent starts.
   */
  spec: Partial<NodeConfigSpec>;
  annotations?: Record<string, string>;
  /** A router namespace with BIRD, and the node's BIRD (for the BGP scenarios). */
  router?: { routerAs: number; nodeAs: number };
  agentArgs?: string[];
}

/** One line of the figures: what a scenario did, how often, its times to converge, what was reported. */
export interface Figure {
  scenario: string;
  fault: string;
  times: number;
  convergeMs: number[];
  reported: string;
}

export class FaultNode {
  readonly pods: PodHandle[] = [];
  router: TestRouter | undefined;
  nodeBird: BirdProcess | undefined;

  private constructor(
    readonly cluster: TestCluster,
    readonly nodeNs: Netns,
    readonly dir: string,
    readonly node: TestNode,
    readonly proxy: TcpProxy,
    readonly options: FaultNodeOptions,
  ) {}

  get api(): HttpTransport {
    return this.cluster.api;
  }

  get cp(): ControlPlane {
    return this.cluster.cp;
  }

  static async start(options: FaultNodeOptions): Promise<FaultNode> {
    requireKernelTier('cnitool', 'nsenter', ...(options.router ? ['bird'] : []));
    const cluster = await startTestCluster(options.nodeName);
    const dir = await mkdtemp(join(tmpdir(), 'flock-faults-'));
    const nodeNs = await Netns.create('fnode');
    const proxy = await startTcpProxy(Number(new URL(cluster.cp.server).port));
    // The agent talks to the API server through the proxy (silent-watch scenario).
    const kubeconfig = join(dir, 'agent.kubeconfig');
    await writeFile(kubeconfig, cluster.cp.kubeconfigYamlVia(`https://127.0.0.1:${proxy.port}`), {
      mode: 0o600,
    });
    const node = new TestNode({
      cp: cluster.cp,
      nodeName: options.nodeName,
      netns: nodeNs,
      dir,
      extraArgs: ['--kubeconfig', kubeconfig, ...(options.agentArgs ?? [])],
    });
    const f = new FaultNode(cluster, nodeNs, dir, node, proxy, options);
    try {
      await f.applyNodeConfig();
      if (options.router) {
        f.router = await TestRouter.create({ node: nodeNs, dir, ...options.router });
        // A node's network manager keeps its static uplink address across a link flap.
        await nodeNs.exec('sysctl', ['-qw', 'net.ipv6.conf.uplink.keep_addr_on_down=1']);
        await f.router.startBird();
      }
      await node.installPlugin();
      await node.startAgent();
      if (options.router) f.nodeBird = await f.startNodeBird();
    } catch (error) {
      await f.destroy();
      throw error;
    }
    return f;
  }

  applyNodeConfig(): Promise<unknown> {
    const { nodeName, spec, annotations } = this.options;
    return this.cluster.apply(
      NODECONFIGS,
      nodeConfig({ name: nodeName, metadata: { annotations }, spec }),
    );
  }

  /** Start the node's BIRD once the agent has written bird.conf. */
  async startNodeBird(): Promise<BirdProcess> {
    const paths = nodeBirdPaths(this.dir);
    await eventually('bird.conf written', () => readFile(paths.configPath, 'utf8'));
    this.nodeBird = await startNodeBird(this.nodeNs, paths);
    return this.nodeBird;
  }

  /** A network namespace for a pod the API server does not know (cleaned up with the node). */
  async bareNetns(name: string): Promise<PodHandle> {
    const ns = await Netns.create('fpod');
    const handle = { name, uid: '', ns, who: { namespace: 'default', name, uid: '' } };
    this.pods.push(handle);
    return handle;
  }

  async createPod(name: string, annotations: Record<string, string> = {}): Promise<PodHandle> {
    const uid = await createTestPod(this.api, {
      name,
      nodeName: this.options.nodeName,
      annotations,
    });
    const ns = await Netns.create('fpod');
    const handle = { name, uid, ns, who: { namespace: 'default', name, uid } };
    this.pods.push(handle);
    return handle;
  }

  /**
   * Run the plugin once as a runtime does (cnitool prints no error code) and return the CNI
   * error it printed; throws when the command succeeded. The container ID is the test's own,
   * so nothing of a cnitool ADD is touched.
   */
  async cniError(
    command: 'ADD' | 'STATUS',
    pod: PodHandle,
  ): Promise<{ code: number; msg: string }> {
    const dir = this.node.binDir;
    const plugin = {
      dir,
      launcher: join(dir, 'flock'),
      bundle: join(dir, 'flock.mjs'),
      node: process.execPath,
    };
    const args = [`K8S_POD_NAMESPACE=default`, `K8S_POD_NAME=${pod.name}`];
    const env: Record<string, string> =
      command === 'STATUS'
        ? { CNI_COMMAND: command }
        : {
            CNI_COMMAND: command,
            CNI_CONTAINERID: `fault-${pod.name}`,
            CNI_NETNS: pod.ns.path,
            CNI_IFNAME: 'eth0',
            CNI_ARGS: args.join(';'),
          };
    const config = {
      cniVersion: '1.1.0',
      name: NETWORK_NAME,
      type: 'flock',
      socketPath: this.node.socketPath,
      timeoutMs: 30_000,
    };
    const r = await invokePlugin(plugin, env, JSON.stringify(config));
    const out = r.output as { code?: unknown; msg?: unknown } | undefined;
    if (r.code === 0 || typeof out?.code !== 'number')
      throw new Error(`${command} ${pod.name}: no CNI error (exit ${r.code}): ${r.stdout}`);
    return { code: out.code, msg: String(out.msg) };
  }

  /** The pod's addresses from a CNI ADD (throws with the CNI error). */
  async add(pod: PodHandle): Promise<string[]> {
    const out = await this.node.cnitool('add', pod.ns.path, pod.who);
    return (JSON.parse(out.stdout) as { ips: { address: string }[] }).ips.map((i) => i.address);
  }

  del(pod: PodHandle): Promise<unknown> {
    return this.node.cnitool('del', pod.ns.path, pod.who);
  }

  forceDelete(name: string): Promise<unknown> {
    return this.api.request({
      method: 'DELETE',
      path: objectPath(PODS, name, 'default'),
      query: { gracePeriodSeconds: 0 },
    });
  }

  async nodeConfig(): Promise<NodeConfig | undefined> {
    const path = objectPath(NODECONFIGS, this.options.nodeName);
    return NodeConfig.parse(await this.api.request({ method: 'GET', path }));
  }

  async condition(type: string) {
    return (await this.nodeConfig())?.status?.conditions?.find((c) => c.type === type);
  }

  async storeEntries(): Promise<{ pod: string; podUID: string; ip6: string; state: string }[]> {
    const text = await readFile(this.node.storePath, 'utf8').catch(() => '{"entries":[]}');
    return (JSON.parse(text) as { entries: never[] }).entries;
  }

  /** The Node's NetworkUnavailable condition. */
  async networkUnavailable(): Promise<{ status: string; reason?: string } | undefined> {
    const n = (await this.api.request({
      method: 'GET',
      path: objectPath(NODES, this.options.nodeName),
    })) as { status?: { conditions?: { type: string; status: string; reason?: string }[] } };
    return n.status?.conditions?.find((c) => c.type === 'NetworkUnavailable');
  }

  /** Events about `name` (any kind), newest last. */
  async events(name: string): Promise<{ reason?: string; note?: string; type?: string }[]> {
    const list = (await this.api.request({
      method: 'GET',
      path: '/apis/events.k8s.io/v1/namespaces/default/events',
    })) as {
      items: { reason?: string; note?: string; type?: string; regarding?: { name?: string } }[];
    };
    return list.items.filter((e) => e.regarding?.name === name);
  }

  /** Lines the agent logged since `from` (an index into its log) that contain `text`. */
  logged(text: string, from = 0): string[] {
    return (this.node.agent?.logs ?? []).slice(from).filter((l) => l.includes(text));
  }

  async destroy(): Promise<void> {
    await this.node.agent?.stop().catch(() => undefined);
    // For a failed run: everything the agent logged.
    const logFile = process.env['FLOCK_FAULT_AGENT_LOG'];
    if (logFile && this.node.agent)
      await appendFile(logFile, `${this.node.agent.logs.join('\n')}\n`);
    await this.nodeBird?.stop().catch(() => undefined);
    await this.router?.destroy().catch(() => undefined);
    for (const p of this.pods) await p.ns.destroy().catch(() => undefined);
    await this.nodeNs.destroy().catch(() => undefined);
    await this.proxy.close().catch(() => undefined);
    await this.cluster.cp.stop();
    await rm(this.dir, { recursive: true, force: true });
  }
}

/** Milliseconds from now until `probe` holds (eventually's rules). */
export async function timeTo<T>(
  what: string,
  probe: () => Promise<T | undefined | false> | T | undefined | false,
  timeoutMs: number,
  since = Date.now(),
): Promise<number> {
  await eventually(what, probe, { timeoutMs, intervalMs: 100 });
  return Date.now() - since;
}

/** Keep a figure: printed now, and appended (JSON line) to $FLOCK_FAULT_FIGURES when set. */
export async function recordFigure(figure: Figure): Promise<void> {
  const max = Math.max(...figure.convergeMs);
  const ms = figure.convergeMs.map((m) => `${(m / 1000).toFixed(1)}s`).join(', ');
  process.stdout.write(
    `[fault figure] ${figure.scenario}: ${figure.fault} x${figure.times}; converged in ${ms} (max ${(max / 1000).toFixed(1)} s); reported: ${figure.reported}\n`,
  );

  const file = process.env['FLOCK_FAULT_FIGURES'];
  if (file) await appendFile(file, `${JSON.stringify(figure)}\n`);
}

/** How many times each fault is repeated: `base` × $FLOCK_FAULT_REPEAT (default 1; a soak sets more). */
export function repeat(base: number): number {
  const n = Number(process.env['FLOCK_FAULT_REPEAT'] ?? '1');
  if (!Number.isInteger(n) || n < 1)
    throw new Error('FLOCK_FAULT_REPEAT must be a whole number >= 1');
  return base * n;
}

export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** A random whole number of milliseconds in [min, max). */
export const randomMs = (min: number, max: number) => Math.floor(min + Math.random() * (max - min));
