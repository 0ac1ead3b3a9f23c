// The lab: a whole flock cluster on one machine. The real control plane (short node-monitor
// and toleration settings), the real operator, a router namespace running BIRD, N node
// namespaces each with the real agent, its BIRD and a kubelet stand-in, and the sample Pool.
import { mkdir, rm } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { setTimeout as delay } from 'node:timers/promises';
import { allCrds } from '@flock/api';
import { run } from '@flock/exec';
import {
  applyObject,
  CUSTOM_RESOURCE_DEFINITIONS,
  HttpTransport,
  POOLS,
  type KubeObject,
  type Logger,
} from '@flock/kube';
import {
  eventually,
  requireKernelTier,
  startControlPlane,
  type ControlPlane,
} from '@flock/testkit';
import { CniRuntime } from './cni-runtime.js';
import { KubeletStandin } from './kubelet-standin.js';
import { LabNode, startDaemon, stopDaemon, type Daemon } from './node.js';
import { NODE_PREFIX4, NODE_PREFIX6, nodePlan, samplePool, type NodePlan } from './plan.js';
import { LabRouter } from './router.js';
import { writeState, type LabState } from './state.js';

const require = createRequire(import.meta.url);
const OPERATOR_MAIN = join(
  dirname(require.resolve('@flock/operator/package.json')),
  'dist',
  'main.js',
);
const CNI_ROOT = dirname(require.resolve('@flock/cni/package.json'));

export interface LabOptions {
  nodes?: number;
  /** Working directory (state file, node dirs, CNI plugin). */
  dir: string;
  log: Logger;
  /** Progress lines ("starting the control plane ..."). */
  progress?: (line: string) => void;
}

export class Lab {
  cp: ControlPlane | undefined;
  api: HttpTransport | undefined;
  operator: Daemon | undefined;
  router: LabRouter | undefined;
  readonly nodes: LabNode[] = [];
  readonly kubelets: KubeletStandin[] = [];
  readonly plans: NodePlan[];

  constructor(readonly options: LabOptions) {
    this.plans = Array.from({ length: options.nodes ?? 3 }, (_, i) => nodePlan(i + 1));
  }

  private step(line: string): void {
    this.options.progress?.(line);
  }

  /** Bring everything up; on failure, tears down what was started and rethrows. */
  async up(): Promise<void> {
    requireKernelTier('bird', 'nsenter', 'flock-controlplane');
    try {
      await this.upSteps();
    } catch (e) {
      await this.down();
      throw e;
    }
  }

  private async upSteps(): Promise<void> {
    const { dir, log } = this.options;
    // A fresh directory: a previous lab's allocation stores must not leak into this cluster.
    await rm(dir, { recursive: true, force: true });
    await mkdir(dir, { recursive: true });
    this.step('control plane (etcd, apiserver, controller-manager, scheduler)');
    this.cp = await startControlPlane({
      components: ['etcd', 'apiserver', 'controller-manager', 'scheduler'],
      extraArgs: {
        apiserver: [
          '--default-not-ready-toleration-seconds=10',
          '--default-unreachable-toleration-seconds=10',
        ],
        'controller-manager': ['--node-monitor-grace-period=10s', '--node-monitor-period=2s'],
      },
    });
    const api = new HttpTransport(this.cp.kubeConfig);
    this.api = api;
    await this.saveState();
    this.step('CRDs and the flock-system namespace');
    for (const [, crd] of allCrds()) await this.apply(CUSTOM_RESOURCE_DEFINITIONS, crd);
    await eventually('CRDs served', () =>
      api.request({ method: 'GET', path: '/apis/flock.fritzlab.net/v1alpha1/pools' }),
    );
    await api
      .request({
        method: 'POST',
        path: '/api/v1/namespaces',
        body: { metadata: { name: 'flock-system' } },
      })
      .catch((e: unknown) => {
        if ((e as { code?: number }).code !== 409) throw e;
      });
    this.step('operator');
    this.operator = startDaemon(process.execPath, [
      OPERATOR_MAIN,
      ...[
        '--kubeconfig',
        this.cp.kubeconfigPath,
        '--namespace',
        'flock-system',
        '--health-port',
        '0',
      ],
      ...['--lease-duration', '4s', '--renew-deadline', '3s', '--retry-period', '1s'],
    ]);
    this.step('CNI plugin bundle');
    const binDir = join(dir, 'cni-bin');
    await run(process.execPath, [join(CNI_ROOT, 'scripts', 'bundle.mjs'), '--outdir', binDir], {
      timeoutMs: 120_000,
    });
    this.step(`router and ${this.plans.length} node namespaces`);
    this.router = await LabRouter.create(dir);
    for (const plan of this.plans) {
      const node = await LabNode.create(plan, dir);
      this.nodes.push(node);
      await this.router.connect(node.ns, plan);
    }
    await this.router.startBird(this.plans);
    await this.saveState();
    this.step('kubelet stand-ins register the nodes');
    for (const node of this.nodes) {
      const identity = await this.cp.mintUser(`system:node:${node.plan.name}`, ['system:nodes']);
      const kubelet = new KubeletStandin(
        node.plan,
        new HttpTransport(identity.kubeConfig),
        new CniRuntime(binDir, join(node.confDir, '10-flock.conflist')),
        log,
        () => void this.saveState(),
      );
      await kubelet.start();
      this.kubelets.push(kubelet);
    }
    this.step('sample Pool');
    await this.apply(POOLS, samplePool());
    this.step('agents (each waits for its NodeConfig) and their BIRDs');
    for (const node of this.nodes) {
      await node.startAgent(this.cp.kubeconfigPath);
      await node.startBird();
    }
    await this.saveState();
    this.step('waiting for the router to learn every node prefix');
    await this.waitForRoutes(this.plans.length);
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
      const v4 = learned.filter((r) => r.endsWith(`/${NODE_PREFIX4}`));
      if (v6.length >= count && v4.length >= count) return [...v6, ...v4];
      if (Date.now() > deadline)
        throw new Error(
          `the router learned ${v6.length} IPv6 and ${v4.length} IPv4 of ${count} node prefixes each: ${learned.join(', ')}`,
        );
      await delay(500);
    }
  }

  /** The node and kubelet stand-in of a node name. */
  node(name: string): { node: LabNode; kubelet: KubeletStandin } {
    const i = this.plans.findIndex((p) => p.name === name);
    const node = this.nodes[i];
    const kubelet = this.kubelets[i];
    if (!node || !kubelet)
      throw new Error(`no node ${name} (nodes: ${this.plans.map((p) => p.name).join(', ')})`);
    return { node, kubelet };
  }

  /** `kill-node`: the stand-in stops, the agent and BIRD die; namespaces stay. */
  async killNode(name: string): Promise<void> {
    const { node, kubelet } = this.node(name);
    await kubelet.kill();
    await node.powerOff();
  }

  /** `kill-kubelet`: only the stand-in stops (the agent and BIRD live on): the 2026-08-16 case. */
  async killKubelet(name: string): Promise<void> {
    await this.node(name).kubelet.kill();
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
      router: this.router?.ns.name,
      nodes: this.nodes.map((n) => ({
        name: n.plan.name,
        netns: n.ns.name,
        agentPid: n.agent?.child.pid,
      })),
      operatorPid: this.operator?.child.pid,
      pods: this.kubelets.flatMap((k) =>
        [...k.pods.values()].map((p) => ({
          pod: p.key,
          node: k.plan.name,
          netns: p.ns.name,
          ips: p.ips,
        })),
      ),
    };
    await writeState(this.options.dir, state);
  }

  /** Tear everything down, in reverse order; safe to call twice. */
  async down(): Promise<void> {
    for (const k of this.kubelets.splice(0)) await k.stop().catch(() => undefined);
    for (const n of this.nodes.splice(0)) await n.destroy().catch(() => undefined);
    await this.router?.destroy().catch(() => undefined);
    this.router = undefined;
    await stopDaemon(this.operator);
    this.operator = undefined;
    await this.cp?.stop();
    this.cp = undefined;
    await this.stateWrites;
    await rm(this.options.dir, { recursive: true, force: true });
  }
}
