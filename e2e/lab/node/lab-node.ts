// One lab node, a machine of its own: network, mount and UTS namespaces (namespaces.ts), a
// cgroup tree (cgroup.ts), and in them what a node runs — containerd (with runc), the kubelet,
// kube-proxy in nftables mode, flock's agent and BIRD — plus flock's CNI plugin and conflist in
// the node's /opt/cni/bin and /etc/cni/net.d, where the container runtime finds them, beside the
// CNI project's reference plugins a node's OS package installs (what cni.chainedPlugins names).
import { access, copyFile, mkdir, symlink, writeFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { setTimeout as delay } from 'node:timers/promises';
import { AGENT_MALLOC_ENV } from '@flock/agent';
import { flockConflist } from '@flock/api';
import { BirdProcess, type BirdPaths } from '@flock/bird/testing';
import { CNI_PLUGINS, NODE_BINARIES, cniPluginsDir, requireTools, which } from '@flock/testkit';
import { running, stopDaemon, waitForLog, watchDaemon, type Daemon } from '../../shared/daemon.js';
import {
  CLUSTER_DNS_IPS,
  inFamilyOrder,
  type PrimaryFamily,
  CLUSTER_DOMAIN,
  MAX_PODS,
  NODE_NS_PREFIX,
  POOL_CIDR4,
  POOL_CIDR6,
  type NodePlan,
} from '../core/plan.js';
import { configureUplink } from '../core/router.js';
import { NodeCgroup } from './cgroup.js';
import { containerdConfig, kubeletConfig, kubeProxyConfig } from './config.js';
import { pauseImage, type LabImage } from './images.js';
import { NodeNamespaces } from './namespaces.js';

const require = createRequire(import.meta.url);
export const AGENT_MAIN = join(
  dirname(require.resolve('@flock/agent/package.json')),
  'dist',
  'src',
  'main.js',
);
export const CNI_NETWORK = 'flock';
export const CONTAINERD_SOCKET = '/run/containerd/containerd.sock';

/** Credentials and addresses a node's daemons need (files readable inside the node). */
export interface NodeCredentials {
  kubeletKubeconfig: string;
  kubeProxyKubeconfig: string;
  agentKubeconfig: string;
  clientCaFile: string;
}

export class LabNode {
  containerd: Daemon | undefined;
  kubelet: Daemon | undefined;
  kubeProxy: Daemon | undefined;
  agent: Daemon | undefined;
  bird: BirdProcess | undefined;
  /** The BFD speaker: a BIRD that runs only BFD, from the config the agent writes. */
  bfd: BirdProcess | undefined;
  readonly birdPaths: BirdPaths;
  readonly bfdPaths: BirdPaths;
  readonly socketPath: string;
  readonly cgroup: NodeCgroup;
  /** The agent's extra flags (kept for restarts). */
  private agentArgs: string[] = [];

  private constructor(
    readonly plan: NodePlan,
    readonly ns: NodeNamespaces,
    readonly dir: string,
    private readonly creds: NodeCredentials,
    readonly primaryFamily: PrimaryFamily,
  ) {
    this.birdPaths = {
      configPath: join(dir, 'bird.conf'),
      socketPath: join(dir, 'bird.ctl'),
      pidPath: join(dir, 'bird.pid'),
    };
    this.bfdPaths = {
      configPath: join(dir, 'bfd.conf'),
      socketPath: join(dir, 'bfd.ctl'),
      pidPath: join(dir, 'bfd.pid'),
    };
    this.socketPath = join(dir, 'run', 'cni.sock');
    // Named after the node's network namespace (unique), so two labs on one machine never share
    // a cgroup tree.
    this.cgroup = new NodeCgroup(ns.netns.name);
  }

  /** The node's namespaces, cgroups, directories and configuration files. */
  static async create(
    plan: NodePlan,
    labDir: string,
    creds: NodeCredentials,
    primary: PrimaryFamily = 'IPv6',
    maxPods = MAX_PODS,
  ): Promise<LabNode> {
    requireTools('unshare', 'runc', ...NODE_BINARIES);
    const plugins = cniPluginsDir();
    const dir = join(labDir, plan.name);
    await mkdir(join(dir, 'run'), { recursive: true });
    const ns = await NodeNamespaces.create(NODE_NS_PREFIX, plan.name, dir);
    const node = new LabNode(plan, ns, dir, creds, primary);
    try {
      // bandwidth, tuning, sbr, portmap (scripts/build-cni-plugins.sh), executable as built.
      for (const p of CNI_PLUGINS) await copyFile(join(plugins, p), join(dir, 'cni-bin', p));
      await ns.enter('sysctl', ['-qw', 'net.ipv6.conf.all.forwarding=1']);
      await node.cgroup.create();
      await writeFile(
        join(dir, 'containerd.toml'),
        containerdConfig({
          pauseImage: pauseImage(),
          runc: which('runc')!,
          primary,
          registryHosts: node.registryHosts,
        }),
      );
      await writeFile(
        join(dir, 'kubelet.yaml'),
        kubeletConfig({
          cgroupRoot: node.cgroup.path,
          clientCaFile: creds.clientCaFile,
          maxPods,
          clusterDomain: CLUSTER_DOMAIN,
          clusterDns: inFamilyOrder(CLUSTER_DNS_IPS, primary),
        }),
      );
      await writeFile(
        join(dir, 'kube-proxy.yaml'),
        kubeProxyConfig({
          kubeconfig: creds.kubeProxyKubeconfig,
          hostname: plan.name,
          clusterCidrs: [POOL_CIDR6, POOL_CIDR4],
        }),
      );
    } catch (e) {
      await node.destroy();
      throw e;
    }
    return node;
  }

  /** A daemon inside the node, in its system cgroup, its output in DIR/NAME.log. */
  private async startInNode(
    name: string,
    file: string,
    args: string[],
    env?: Readonly<Record<string, string>>,
  ): Promise<Daemon> {
    const child = this.ns.spawn(file, args, env);
    if (child.pid !== undefined) await this.cgroup.adopt(child.pid);
    return watchDaemon(child, join(this.dir, `${name}.log`));
  }

  /** flock's CNI plugin (the bundle) and conflist, where the install-cni init container puts them. */
  async installCni(bundleDir: string): Promise<void> {
    for (const f of ['flock', 'flock.mjs'])
      await copyFile(join(bundleDir, f), join(this.dir, 'cni-bin', f));
    // The launcher runs /opt/flock/bin/node, as the agent DaemonSet installs it.
    await mkdir(join(this.dir, 'opt-flock', 'bin'), { recursive: true });
    await symlink(process.execPath, join(this.dir, 'opt-flock', 'bin', 'node')).catch(
      (e: unknown) => {
        if ((e as NodeJS.ErrnoException).code !== 'EEXIST') throw e;
      },
    );
    const conflist = flockConflist({
      name: CNI_NETWORK,
      socketPath: this.socketPath,
      timeoutMs: 30_000,
    });
    await writeFile(join(this.dir, 'cni-conf', '10-flock.conflist'), JSON.stringify(conflist));
  }

  /** containerd's registry hosts directory (HOST/hosts.toml; empty unless a suite serves images). */
  get registryHosts(): string {
    return join(this.dir, 'certs.d');
  }

  /** `ctr` against the node's containerd (namespace k8s.io, the CRI's). */
  ctr(args: string[], timeoutMs = 60_000) {
    return this.ns.enter('ctr', ['--address', CONTAINERD_SOCKET, '-n', 'k8s.io', ...args], {
      timeoutMs,
    });
  }

  /** Start containerd and wait until it answers. */
  async startContainerd(timeoutMs = 30_000): Promise<void> {
    this.containerd = await this.startInNode('containerd', 'containerd', [
      '--config',
      join(this.dir, 'containerd.toml'),
    ]);
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const ok = await this.ctr(['version'], 5_000).then(
        () => true,
        () => false,
      );
      if (ok) return;
      if (!running(this.containerd) || Date.now() > deadline)
        throw new Error(
          `containerd of ${this.plan.name} did not come up:\n${this.containerd.logs.slice(-15).join('\n')}`,
        );
      await delay(200);
    }
  }

  /** `crictl` against the node's containerd (the CRI, as the kubelet sees it). */
  crictl(args: string[], timeoutMs = 30_000) {
    return this.ns.enter('crictl', ['--runtime-endpoint', `unix://${CONTAINERD_SOCKET}`, ...args], {
      timeoutMs,
    });
  }

  async importImages(images: LabImage[]): Promise<void> {
    for (const image of images) await this.ctr(['images', 'import', image.archive], 300_000);
  }

  /** Start the kubelet; it registers the Node itself (node identity, addresses from --node-ip). */
  async startKubelet(): Promise<void> {
    this.kubelet = await this.startInNode('kubelet', 'kubelet', [
      `--config=${join(this.dir, 'kubelet.yaml')}`,
      `--kubeconfig=${this.creds.kubeletKubeconfig}`,
      `--hostname-override=${this.plan.name}`,
      // IPv6 first: the kubelet orders each pod's podIPs by the node's primary family (flock is
      // IPv6 first); the agent takes its BGP router id from the IPv4 InternalIP. An IPv4 lab's
      // nodes have only their IPv4 address (LabOptions.primaryFamily).
      `--node-ip=${this.primaryFamily === 'IPv6' ? `${this.plan.node6},${this.plan.node4}` : this.plan.node4}`,
    ]);
  }

  async startKubeProxy(): Promise<void> {
    this.kubeProxy = await this.startInNode('kube-proxy', 'kube-proxy', [
      `--config=${join(this.dir, 'kube-proxy.yaml')}`,
    ]);
  }

  /** Start the agent inside the node; resolves once it is ready (it waits for its NodeConfig). */
  async startAgent(extraArgs: string[] = this.agentArgs, timeoutMs = 120_000): Promise<void> {
    this.agentArgs = extraArgs;
    // With the image's malloc settings too (images/agent/Dockerfile's ENV): what the agent's
    // memory is measured against (the hostile suite) is how it runs in production.
    this.agent = await this.startInNode(
      'agent',
      process.execPath,
      [
        // The heap the agent image runs with (images/agent/Dockerfile's NODE_OPTIONS).
        ...['--max-old-space-size=128', '--max-semi-space-size=1'],
        AGENT_MAIN,
        ...['--node-name', this.plan.name, '--kubeconfig', this.creds.agentKubeconfig],
        ...['--socket', this.socketPath, '--store', join(this.dir, 'lib', 'allocations.json')],
        ...['--nat64-dir', join(this.dir, 'lib', 'nat64')],
        ...['--health-port', '0', '--resync', '5s'],
        ...['--bird-config', this.birdPaths.configPath, '--bird-socket', this.birdPaths.socketPath],
        ...['--bfd-config', this.bfdPaths.configPath, '--bfd-socket', this.bfdPaths.socketPath],
        ...extraArgs,
      ],
      AGENT_MALLOC_ENV,
    );
    await waitForLog(this.agent, `agent of ${this.plan.name}`, 'start-up: ready', timeoutMs);
  }

  /** Start BIRD in the node once the agent has written bird.conf (`recover`: bird -R). */
  async startBird(timeoutMs = 30_000, recover = false): Promise<void> {
    this.bird = await this.startBirdFrom(this.birdPaths, timeoutMs, recover);
  }

  /** Start the BFD speaker once the agent has written its config. */
  async startBfdSpeaker(timeoutMs = 30_000): Promise<void> {
    this.bfd = await this.startBirdFrom(this.bfdPaths, timeoutMs, false);
  }

  private async startBirdFrom(
    paths: BirdPaths,
    timeoutMs: number,
    recover: boolean,
  ): Promise<BirdProcess> {
    const deadline = Date.now() + timeoutMs;
    while (
      !(await access(paths.configPath).then(
        () => true,
        () => false,
      ))
    ) {
      if (Date.now() > deadline)
        throw new Error(`agent of ${this.plan.name} wrote no ${paths.configPath}`);
      await delay(200);
    }
    return BirdProcess.start(
      (f, a) => {
        const child = this.ns.spawn(f, a);
        if (child.pid !== undefined) void this.cgroup.adopt(child.pid);
        return child;
      },
      paths,
      10_000,
      { recover },
    );
  }

  /** BIRD dies (SIGKILL); the agent and the pods stay. */
  killBird(): void {
    this.bird?.child.kill('SIGKILL');
    this.bird = undefined;
  }

  /** Stop the agent (SIGTERM) and start it again, pods and BIRD left running. */
  async restartAgent(): Promise<void> {
    await stopDaemon(this.agent);
    await this.startAgent();
  }

  /** The kubelet crashes (SIGKILL); containers, containerd, agent and BIRD live on. */
  async killKubelet(): Promise<void> {
    await stopDaemon(this.kubelet, 'SIGKILL');
  }

  /** containerd restarts under running pods (their shims and containers stay). */
  async restartContainerd(): Promise<void> {
    await stopDaemon(this.containerd);
    await this.startContainerd();
  }

  /**
   * The node loses power: every process of the node dies at once (kubelet, containerd and its
   * shims, the containers, kube-proxy, agent, BIRD) and the uplink goes dark; the namespaces
   * stay, as a powered-off machine's disks do.
   */
  async powerOff(): Promise<void> {
    await this.cgroup.killAll();
    this.bird = undefined;
    this.bfd = undefined;
    await this.ns.enter('ip', ['link', 'set', 'uplink', 'down']);
  }

  /**
   * After powerOff: the node boots again. What a reboot loses is lost — the runtime's state
   * (/run/containerd) and the pods' network namespaces (/run/netns) — and what it keeps is kept
   * (/var/lib/containerd, /var/lib/kubelet, flock's allocation store); then the uplink comes up
   * and containerd, the kubelet, kube-proxy, the agent and BIRD start again.
   */
  async reboot(): Promise<void> {
    await this.ns.resetVolatile();
    await this.ns.enter('ip', ['link', 'set', 'uplink', 'up']);
    // The link going down took its addresses and the routes through it.
    await configureUplink((f, a) => this.ns.enter(f, a), this.plan);
    await this.startContainerd();
    await this.startKubelet();
    await this.startKubeProxy();
    await this.startAgent();
    await this.startBird();
    await this.startBfdSpeaker();
  }

  async destroy(): Promise<void> {
    for (const d of [this.kubelet, this.kubeProxy, this.agent]) await stopDaemon(d);
    await this.bird?.stop();
    await this.bfd?.stop();
    this.bird = undefined;
    this.bfd = undefined;
    await this.cgroup.remove();
    await this.ns.destroy();
  }
}
