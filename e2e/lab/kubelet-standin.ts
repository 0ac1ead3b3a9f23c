// TEST INFRASTRUCTURE — a kubelet stand-in for one lab node (there is no container runtime
// here). It registers its Node, renews its Lease and Ready condition, and runs the pods bound
// to it: a network namespace per pod, the real flock CNI plugin through the node's conflist
// (ADD on start, DEL on deletion), a workload process answering on every declared port, and
// the pod's status as a kubelet reports it. `kill()` stops everything it does (heartbeats, pod
// sync) and leaves the namespaces, so the node-lifecycle controller sees a dead node.
import { randomBytes } from 'node:crypto';
import { setTimeout as delay } from 'node:timers/promises';
import { z } from 'zod';
import { objectPath, NODES, PODS, type KubeTransport, type Logger } from '@flock/kube';
import { Netns } from '@flock/testkit';
import type { CniResult, CniRuntime } from './cni-runtime.js';
import { labScript, MAX_PODS, POD_NS_PREFIX, type NodePlan } from './plan.js';
import { startDaemon, stopDaemon, type Daemon } from './node.js';

const WORKLOAD = labScript('workload');
const HEARTBEAT_MS = 2_000;
const STATUS_MS = 10_000;
const SYNC_MS = 1_000;

const Pod = z.looseObject({
  metadata: z.looseObject({
    name: z.string(),
    namespace: z.string(),
    uid: z.string(),
    deletionTimestamp: z.string().optional(),
  }),
  spec: z.looseObject({
    containers: z.array(
      z.looseObject({
        name: z.string(),
        image: z.string().optional(),
        ports: z
          .array(z.object({ containerPort: z.int(), protocol: z.string().optional() }))
          .optional(),
      }),
    ),
  }),
  status: z.looseObject({ phase: z.string().optional() }).optional(),
});
type Pod = z.infer<typeof Pod>;
const PodList = z.object({ items: z.array(Pod) });

/** A pod this node runs. */
export interface RunningPod {
  key: string;
  uid: string;
  ns: Netns;
  containerId: string;
  cni: CniResult;
  workload: Daemon;
  /** Public addresses from the CNI result, without prefix length. */
  ips: string[];
}

const microTime = () => new Date().toISOString().replace(/\.(\d{3})Z$/, '.$1000Z');

export class KubeletStandin {
  readonly pods = new Map<string, RunningPod>();
  /** When CNI ADD returned for each pod started (ms since the epoch): benchmarks read it. */
  readonly addReturnedAt = new Map<string, number>();
  /** When the pod's Ready=True status was written (ms since the epoch). */
  readonly readyAt = new Map<string, number>();
  private stopped = false;
  private loops: Promise<void>[] = [];

  constructor(
    readonly plan: NodePlan,
    private readonly api: KubeTransport,
    private readonly cni: CniRuntime,
    private readonly log: Logger,
    /** Called whenever the set of running pods changes (the lab records it for `exec`). */
    private readonly onPodsChanged: () => void = () => undefined,
  ) {}

  /** Register the Node (or take it over again) and start heartbeats and pod sync. */
  async start(): Promise<void> {
    const name = this.plan.name;
    await this.api
      .request({
        method: 'POST',
        path: '/api/v1/nodes',
        body: {
          apiVersion: 'v1',
          kind: 'Node',
          metadata: {
            name,
            labels: { 'kubernetes.io/hostname': name, 'kubernetes.io/os': 'linux' },
          },
        },
      })
      .catch((e: unknown) => {
        if ((e as { code?: number }).code !== 409) throw e;
      });
    await this.reportStatus();
    await this.renewLease();
    this.loops = [
      this.every(HEARTBEAT_MS, () => this.renewLease()),
      this.every(STATUS_MS, () => this.reportStatus()),
      this.every(SYNC_MS, () => this.syncPods()),
    ];
  }

  private async every(ms: number, task: () => Promise<void>): Promise<void> {
    while (!this.stopped) {
      await task().catch((e: unknown) => {
        if (!this.stopped)
          this.log.warn('kubelet stand-in task failed', { node: this.plan.name, error: String(e) });
      });
      await delay(ms);
    }
  }

  private async reportStatus(): Promise<void> {
    const now = new Date().toISOString();
    await this.api.request({
      method: 'PATCH',
      path: objectPath(NODES, this.plan.name, undefined, 'status'),
      contentType: 'application/strategic-merge-patch+json',
      body: {
        status: {
          addresses: [
            // One InternalIP only: strategic merge keys addresses by type. The agent takes its
            // BGP router id from the IPv4 one.
            { type: 'InternalIP', address: this.plan.node4 },
            { type: 'Hostname', address: this.plan.name },
          ],
          capacity: { cpu: '2', memory: '4Gi', pods: String(MAX_PODS) },
          allocatable: { cpu: '2', memory: '4Gi', pods: String(MAX_PODS) },
          conditions: [
            {
              type: 'Ready',
              status: 'True',
              reason: 'KubeletReady',
              message: 'flock lab kubelet stand-in is posting ready status',
              lastHeartbeatTime: now,
            },
          ],
          nodeInfo: { kubeletVersion: 'v1.36.3-flock-lab-standin' },
        },
      },
    });
  }

  private async renewLease(): Promise<void> {
    const path = `/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases/${this.plan.name}`;
    const spec = {
      holderIdentity: this.plan.name,
      leaseDurationSeconds: 40,
      renewTime: microTime(),
    };
    try {
      await this.api.request({
        method: 'PATCH',
        path,
        contentType: 'application/merge-patch+json',
        body: { spec },
      });
    } catch (e) {
      if ((e as { code?: number }).code !== 404) throw e;
      await this.api.request({
        method: 'POST',
        path: '/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases',
        body: {
          apiVersion: 'coordination.k8s.io/v1',
          kind: 'Lease',
          metadata: { name: this.plan.name },
          spec,
        },
      });
    }
  }

  /** One pass: start new pods, finish deleted ones, forget pods removed behind our back. */
  private async syncPods(): Promise<void> {
    const list = PodList.parse(
      await this.api.request({
        method: 'GET',
        path: '/api/v1/pods',
        query: { fieldSelector: `spec.nodeName=${this.plan.name}` },
      }),
    );
    const seen = new Set<string>();
    for (const pod of list.items) {
      const key = `${pod.metadata.namespace}/${pod.metadata.name}`;
      seen.add(key);
      // Pods are independent, as on a real kubelet: one that cannot start (its CNI ADD refused)
      // is retried on the next pass and never holds up the pods after it.
      await this.syncPod(pod, key).catch((e: unknown) => {
        if (!this.stopped)
          this.log.warn('pod sync failed', { node: this.plan.name, pod: key, error: String(e) });
      });
    }
    for (const [key, r] of this.pods) if (!seen.has(key)) await this.teardown(r);
  }

  private async syncPod(pod: Pod, key: string): Promise<void> {
    const running = this.pods.get(key);
    if (running && running.uid !== pod.metadata.uid) await this.teardown(running);
    if (pod.metadata.deletionTimestamp) {
      const r = this.pods.get(key);
      if (r) await this.teardown(r);
      // Confirm the deletion, as a kubelet does once the containers are gone.
      await this.api.request({
        method: 'DELETE',
        path: objectPath(PODS, pod.metadata.name, pod.metadata.namespace),
        body: { gracePeriodSeconds: 0, preconditions: { uid: pod.metadata.uid } },
      });
    } else if (!this.pods.has(key) && !['Succeeded', 'Failed'].includes(pod.status?.phase ?? '')) {
      await this.startPod(pod, key);
    }
  }

  private async startPod(pod: Pod, key: string): Promise<void> {
    const { name, namespace, uid } = pod.metadata;
    const ns = await Netns.create(POD_NS_PREFIX);
    const containerId = randomBytes(32).toString('hex');
    const cniPod = { containerId, netnsPath: ns.path, namespace, name, uid };
    let cni: CniResult | undefined;
    let workload: Daemon | undefined;
    try {
      cni = await this.cni.add(cniPod);
      this.addReturnedAt.set(key, Date.now());
      const ports = pod.spec.containers.flatMap((c) =>
        (c.ports ?? []).map((p) => `${(p.protocol ?? 'TCP').toLowerCase()}:${p.containerPort}`),
      );
      workload = startDaemon('ip', [
        'netns',
        'exec',
        ns.name,
        process.execPath,
        WORKLOAD,
        key,
        ...ports,
      ]);
      await this.waitReady(workload, key);
      const ips = cni.ips.map((i) => i.address.split('/')[0] as string);
      this.pods.set(key, { key, uid, ns, containerId, cni, workload, ips });
      this.onPodsChanged();
      await this.reportPodRunning(pod, ips);
      this.readyAt.set(key, Date.now());
      this.log.info('pod running', { node: this.plan.name, pod: key, ips });
    } catch (e) {
      await stopDaemon(workload, 'SIGKILL');
      if (cni) await this.cni.del(cniPod, cni).catch(() => undefined);
      await ns.destroy();
      throw e;
    }
  }

  private async waitReady(workload: Daemon, key: string): Promise<void> {
    const deadline = Date.now() + 15_000;
    while (!workload.logs.includes('ready')) {
      if (workload.child.exitCode !== null || Date.now() > deadline)
        throw new Error(`workload of ${key} did not start: ${workload.logs.join('\n')}`);
      await delay(50);
    }
  }

  /**
   * A readiness probe's verdict: the pod's Ready and ContainersReady conditions (stands in for
   * the probes a real kubelet runs; the lab has none).
   */
  async setPodReady(key: string, ready: boolean): Promise<void> {
    const r = this.pods.get(key);
    if (!r) throw new Error(`${this.plan.name} runs no pod ${key}`);
    const [namespace, name] = key.split('/') as [string, string];
    const now = new Date().toISOString();
    const status = ready ? 'True' : 'False';
    await this.api.request({
      method: 'PATCH',
      path: objectPath(PODS, name, namespace, 'status'),
      contentType: 'application/strategic-merge-patch+json',
      body: {
        status: {
          conditions: ['ContainersReady', 'Ready'].map((type) => ({
            type,
            status,
            lastTransitionTime: now,
          })),
        },
      },
    });
  }

  private async reportPodRunning(pod: Pod, ips: string[]): Promise<void> {
    const now = new Date().toISOString();
    const conditions = ['PodScheduled', 'Initialized', 'ContainersReady', 'Ready'].map((type) => ({
      type,
      status: 'True',
      lastTransitionTime: now,
    }));
    await this.api.request({
      method: 'PATCH',
      path: objectPath(PODS, pod.metadata.name, pod.metadata.namespace, 'status'),
      contentType: 'application/strategic-merge-patch+json',
      body: {
        status: {
          phase: 'Running',
          hostIP: this.plan.node6,
          hostIPs: [{ ip: this.plan.node6 }],
          podIP: ips[0],
          podIPs: ips.map((ip) => ({ ip })),
          startTime: now,
          conditions,
          containerStatuses: pod.spec.containers.map((c) => ({
            name: c.name,
            image: c.image ?? '',
            imageID: '',
            ready: true,
            started: true,
            restartCount: 0,
            state: { running: { startedAt: now } },
          })),
        },
      },
    });
  }

  private async teardown(r: RunningPod): Promise<void> {
    this.pods.delete(r.key);
    await stopDaemon(r.workload);
    const [namespace, name] = r.key.split('/') as [string, string];
    try {
      await this.cni.del(
        { containerId: r.containerId, netnsPath: r.ns.path, namespace, name, uid: r.uid },
        r.cni,
      );
    } finally {
      await r.ns.destroy();
      this.onPodsChanged();
    }
    this.log.info('pod removed', { node: this.plan.name, pod: r.key });
  }

  /** The node dies: no more heartbeats or pod sync; pods and namespaces stay as they are. */
  async kill(): Promise<void> {
    this.stopped = true;
    await Promise.all(this.loops);
  }

  /** Clean stop of the lab: every pod torn down (CNI DEL), then the loops stopped. */
  async stop(): Promise<void> {
    await this.kill();
    for (const r of [...this.pods.values()]) await this.teardown(r).catch(() => undefined);
  }
}
