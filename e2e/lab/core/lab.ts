// The lab: a whole flock cluster on one machine. A router namespace running BIRD; the real
// control plane in a namespace of its own behind the router (short node-monitor and toleration
// settings); the real operator; N real nodes, each with containerd, runc, the kubelet,
// kube-proxy, flock's agent and BIRD (node/lab-node.ts); the sample Pool; the cluster DNS.
import { mkdir, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { setTimeout as delay } from 'node:timers/promises';
import { applyObject, HttpTransport, POOLS, type KubeObject, type Logger } from '@flock/kube';
import { eventually, Netns, requireKernelTier, type ControlPlane } from '@flock/testkit';
import { stopDaemon, watchDaemon, type Daemon } from '../../shared/daemon.js';
import { applyClusterDns, waitForClusterDns } from './dns.js';
import { flockImages, helmInstall } from './helm.js';
import { NodeCgroup } from '../node/cgroup.js';
import { labImages } from '../node/images.js';
import { LabNode, type NodeCredentials } from '../node/lab-node.js';
import {
  CP_NS_PREFIX,
  NODE_API_SERVER,
  NODE_PREFIX4,
  NODE_PREFIX6,
  nodePlan,
  samplePool,
  type NodePlan,
  type PrimaryFamily,
} from './plan.js';
import { crdsServed, startFlockOnHost, startLabControlPlane } from './lab-control-plane.js';
import { LabRouter, routerBirdConfig } from './router.js';
import { writeState, type LabState } from './state.js';

export interface LabOptions {
  nodes?: number;
  /** Working directory (state file, node dirs, CNI plugin). */
  dir: string;
  log: Logger;
  /** Progress lines ("starting the control plane ..."). */
  progress?: (line: string) => void;
  /** Each node's IPv4 slice (default NODE_PREFIX4): a test that exhausts it picks a small one. */
  nodePrefix4?: number;
  /** Pods each kubelet may run (default MAX_PODS). */
  maxPods?: number;
  /** Extra flags for every agent (e.g. a short --address-quarantine). */
  agentArgs?: string[];
  /**
   * How flock gets onto the nodes: `processes` (default) runs the agents and BIRDs as processes
   * inside the nodes and the operator on the host; `helm` imports the images built from the
   * Dockerfiles and runs `helm install` (helm.ts).
   */
  install?: 'processes' | 'helm';
  /** With `helm`: chart values (KEY=VALUE) on top of the lab's. */
  helmValues?: string[];
  /**
   * How fast a silent node is declared NotReady and its pods evicted: `fast` (default; 10 s
   * grace and 10 s tolerations, for the kill-node scenarios) or `default` (Kubernetes' own: 50 s
   * grace, 300 s tolerations — Kubernetes' e2e specs assume these, and on a busy machine a
   * kubelet can miss 10 s of status updates).
   */
  nodeFailureDetection?: 'fast' | 'default';
  /** CoreDNS behind kube-dns (core/dns.ts; default true). The kubelets name it either way. */
  clusterDns?: boolean;
  /**
   * The cluster's first family (default IPv6). `IPv4`: the Service ranges and the API server's
   * address IPv4 first, and the Nodes' InternalIPs IPv4 only, as on the single-stack-node
   * clusters upstream's LoadBalancer specs assume (pods and Services stay dual-stack).
   */
  primaryFamily?: PrimaryFamily;
}

export class Lab {
  cp: ControlPlane | undefined;
  cpNs: Netns | undefined;
  api: HttpTransport | undefined;
  operator: Daemon | undefined;
  router: LabRouter | undefined;
  private readonly routerDaemons: Daemon[] = [];
  readonly nodes: LabNode[] = [];
  readonly plans: NodePlan[];
  // The control plane is a machine of its own too: a cgroup tree beside the nodes', so that on
  // a busy machine it gets a machine's fair share of the CPU (on cgroup v1, every process left
  // in the root cpu cgroup weighs as much as all the nodes together: while the control plane
  // was busy, the nodes got far less). The router stays out of that competition: a top-of-rack
  // router has CPU of its own, and its BFD must not wait for the nodes' pods to start.
  readonly cpCgroup = new NodeCgroup('controlplane');

  constructor(readonly options: LabOptions) {
    this.plans = Array.from({ length: options.nodes ?? 3 }, (_, i) => nodePlan(i + 1));
  }

  get primaryFamily(): PrimaryFamily {
    return this.options.primaryFamily ?? 'IPv6';
  }

  get nodePrefix4(): number {
    return this.options.nodePrefix4 ?? NODE_PREFIX4;
  }

  private step(line: string): void {
    this.options.progress?.(line);
  }

  /** Bring everything up; on failure, tears down what was started and rethrows. */
  async up(): Promise<void> {
    requireKernelTier('bird', 'nsenter', 'unshare', 'flock-controlplane');
    try {
      await this.upSteps();
    } catch (e) {
      await this.down();
      throw e;
    }
  }

  private async upSteps(): Promise<void> {
    const { dir } = this.options;
    // A fresh directory: a previous lab's allocation stores must not leak into this cluster.
    await rm(dir, { recursive: true, force: true });
    await mkdir(dir, { recursive: true });
    this.step("router and the control plane's namespace");
    await this.cpCgroup.create();
    this.router = await LabRouter.open(dir);
    this.cpNs = await Netns.create(CP_NS_PREFIX);
    await this.router.connectControlPlane(this.cpNs);
    this.step('control plane (etcd, apiserver, controller-manager, scheduler)');
    this.cp = await startLabControlPlane(
      this.cpNs,
      this.primaryFamily,
      (this.options.nodeFailureDetection ?? 'fast') === 'fast',
    );
    for (const pid of this.cp.pids()) await this.cpCgroup.adopt(pid);
    const api = new HttpTransport(this.cp.kubeConfig);
    this.api = api;
    await this.saveState();
    const helm = this.options.install === 'helm';
    if (!helm) {
      this.operator = await startFlockOnHost({
        dir,
        api,
        cp: this.cp,
        cpCgroup: this.cpCgroup,
        apply: (resource, obj) => this.apply(resource, obj),
        step: (line) => this.step(line),
      });
    }
    const images = [...(await labImages()), ...(helm ? flockImages() : [])];
    const creds = await this.nodeCredentials();
    this.step(`${this.plans.length} nodes: namespaces, containerd, images, kubelet`);
    for (const plan of this.plans) {
      const node = await LabNode.create(
        plan,
        dir,
        creds(plan),
        this.primaryFamily,
        this.options.maxPods,
      );
      this.nodes.push(node);
      await this.router.connect(node.ns.netns, plan);
    }
    await this.router.startBird(routerBirdConfig(this.plans));
    await this.saveState();
    await Promise.all(
      this.nodes.map(async (node) => {
        if (!helm) await node.installCni(join(dir, 'cni-bundle'));
        await node.startContainerd();
        await node.importImages(images);
        await node.startKubelet();
        await node.startKubeProxy();
      }),
    );
    await this.saveState();
    await eventually(
      'every kubelet registered its Node',
      async () => {
        const list = (await api.request({ method: 'GET', path: '/api/v1/nodes' })) as {
          items: unknown[];
        };
        if (list.items.length < this.plans.length)
          throw new Error(`${list.items.length} of ${this.plans.length} Nodes`);
        return true;
      },
      { timeoutMs: 120_000 },
    );
    if (helm) {
      this.step('helm install flock charts/flock (CRDs, operator Deployment, agent DaemonSet)');
      await helmInstall(this.cp.kubeconfigPath, [
        'agent.resync=5s',
        ...(this.options.helmValues ?? []),
      ]);
      await eventually('the CRDs served', () => crdsServed(api), { timeoutMs: 60_000 });
    }
    this.step('sample Pool');
    await this.apply(POOLS, samplePool(this.nodePrefix4));
    const dns = this.options.clusterDns ?? true;
    if (dns) {
      this.step('cluster DNS (CoreDNS in kube-system, Service kube-dns)');
      await applyClusterDns(this);
    }
    if (!helm) {
      this.step('agents (each waits for its NodeConfig), their BIRDs and BFD speakers');
      await Promise.all(
        this.nodes.map(async (node) => {
          await node.startAgent(this.options.agentArgs);
          await node.startBird();
          await node.startBfdSpeaker();
        }),
      );
    }
    await this.saveState();
    this.step('waiting for the nodes to be Ready and the router to learn every node prefix');
    await this.waitForNodesReady(helm ? 300_000 : 120_000);
    await this.waitForRoutes(this.plans.length, helm ? 180_000 : 60_000);
    if (dns) {
      this.step('waiting for CoreDNS to be Ready (synced with the API server)');
      await waitForClusterDns(this, helm ? 180_000 : 120_000);
    }
  }

  /** Kubeconfigs for the nodes' daemons, naming the API server where nodes reach it. */
  private async nodeCredentials(): Promise<(plan: NodePlan) => NodeCredentials> {
    const cp = this.cp!;
    const dir = this.options.dir;
    const kubeProxy = await cp.mintUser('system:kube-proxy', [], NODE_API_SERVER);
    // The agent runs with admin credentials here; in a cluster, with its ServiceAccount.
    const agentKubeconfig = join(dir, 'agent.kubeconfig');
    await writeFile(agentKubeconfig, cp.kubeconfigYamlVia(NODE_API_SERVER), { mode: 0o600 });
    const kubelets = new Map<string, string>();
    for (const plan of this.plans) {
      const identity = await cp.mintUser(
        `system:node:${plan.name}`,
        ['system:nodes'],
        NODE_API_SERVER,
      );
      kubelets.set(plan.name, identity.path);
    }
    return (plan) => ({
      kubeletKubeconfig: kubelets.get(plan.name)!,
      kubeProxyKubeconfig: kubeProxy.path,
      agentKubeconfig,
      clientCaFile: cp.state.caFile,
    });
  }

  /** Wait until every node reports Ready (the runtime's NetworkReady needs flock's STATUS). */
  async waitForNodesReady(timeoutMs = 120_000): Promise<void> {
    await eventually(
      'every node Ready',
      async () => {
        const list = (await this.api!.request({ method: 'GET', path: '/api/v1/nodes' })) as {
          items: {
            metadata: { name: string };
            status?: { conditions?: { type: string; status: string }[] };
          }[];
        };
        const notReady = list.items.filter(
          (n) => !n.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True'),
        );
        if (notReady.length)
          throw new Error(`not Ready: ${notReady.map((n) => n.metadata.name).join(', ')}`);
        return true;
      },
      { timeoutMs },
    );
  }

  apply(resource: Parameters<typeof applyObject>[1], obj: object): Promise<unknown> {
    return applyObject(this.api!, resource, obj as KubeObject, {
      fieldManager: 'flock-lab',
      force: true,
    });
  }

  /** Wait until the router holds at least `count` node aggregates of each family. */
  async waitForRoutes(count: number, timeoutMs = 60_000): Promise<string[]> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const learned = await this.router!.learned();
      const v6 = learned.filter((r) => r.endsWith(`/${NODE_PREFIX6}`));
      const v4 = learned.filter((r) => r.endsWith(`/${this.nodePrefix4}`));
      if (v6.length >= count && v4.length >= count) return [...v6, ...v4];
      if (Date.now() > deadline)
        throw new Error(
          `the router learned ${v6.length} IPv6 and ${v4.length} IPv4 of ${count} node prefixes each: ${learned.join(', ')}`,
        );
      await delay(500);
    }
  }

  /** The node of a node name. */
  node(name: string): LabNode {
    const node = this.nodes[this.plans.findIndex((p) => p.name === name)];
    if (!node)
      throw new Error(`no node ${name} (nodes: ${this.plans.map((p) => p.name).join(', ')})`);
    return node;
  }

  /** `kill-node`: every process of the node dies and its uplink goes down; namespaces stay. */
  async killNode(name: string): Promise<void> {
    await this.node(name).powerOff();
  }

  /** `kill-kubelet`: only the kubelet dies (containers, agent and BIRD live): the 2026-08-16 case. */
  async killKubelet(name: string): Promise<void> {
    await this.node(name).killKubelet();
  }

  private stateWrites: Promise<void> = Promise.resolve();

  /** The state file `status`, `kubectl`, `exec` and `down` read (writes one after another). */
  saveState(): Promise<void> {
    this.stateWrites = this.stateWrites
      .then(() => this.writeState())
      .catch((e: unknown) => {
        this.options.log.warn('could not write the lab state file', { error: String(e) });
      });
    return this.stateWrites;
  }

  private async writeState(): Promise<void> {
    if (!this.cp) return;
    const state: LabState = {
      pid: process.pid,
      dir: this.options.dir,
      kubeconfig: this.cp.kubeconfigPath,
      controlPlaneDir: this.cp.dir,
      controlPlaneNetns: this.cpNs?.name,
      router: this.router?.ns.name,
      nodes: this.nodes.map((n) => ({
        name: n.plan.name,
        netns: n.ns.name,
        mntFile: n.ns.mntFile,
        utsFile: n.ns.utsFile,
        cgroup: n.cgroup.path,
      })),
      operatorPid: this.operator?.child.pid,
    };
    await writeState(this.options.dir, state);
  }

  /**
   * A daemon in the router's namespace for a suite (e.g. conformance/registry.ts), its output in
   * the lab's directory as NAME.log; down() stops it.
   */
  startInRouter(name: string, file: string, args: string[]): Daemon {
    if (!this.router) throw new Error('the lab has no router yet');
    const daemon = watchDaemon(
      this.router.ns.spawn(file, args),
      join(this.options.dir, `${name}.log`),
    );
    this.routerDaemons.push(daemon);
    return daemon;
  }

  /** Tear everything down, in reverse order; safe to call twice. */
  async down(): Promise<void> {
    await Promise.all(this.routerDaemons.splice(0).map((d) => stopDaemon(d)));
    await Promise.all(this.nodes.splice(0).map((n) => n.destroy().catch(() => undefined)));
    await stopDaemon(this.operator);
    this.operator = undefined;
    await this.cp?.stop();
    this.cp = undefined;
    await this.cpNs?.destroy();
    this.cpNs = undefined;
    await this.router?.destroy().catch(() => undefined);
    this.router = undefined;
    await this.cpCgroup.remove();
    await this.stateWrites;
    await rm(this.options.dir, { recursive: true, force: true });
  }
}
