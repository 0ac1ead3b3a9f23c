// flock installed the way users install it, on the lab's real nodes: the agent and operator
// images built from images/*/Dockerfile, imported into each node's containerd, and
// `helm install flock charts/flock`. The agents (and BIRD) run as the chart's DaemonSet, the
// operator as its Deployment; no flock process runs outside a container.
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { NodeConfig } from '@flock/api';
import { NODECONFIGS, objectPath, silentLogger } from '@flock/kube';
import { eventually, requireKernelTier } from '@flock/testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FLOCK_NAMESPACE } from './helm.js';
import { Lab } from './lab.js';
import { sampleDeployment } from './plan.js';
import { readState } from './state.js';
import { probeFromRouter } from './status.js';
import { DEPLOYMENTS, listPods, waitForPods } from './workloads.js';

let lab: Lab;
let dir: string;

beforeAll(async () => {
  requireKernelTier('bird', 'nsenter', 'flock-controlplane', 'kubectl', 'helm');
  dir = await mkdtemp(join(tmpdir(), 'flock-lab-helm-'));
  lab = new Lab({ nodes: 2, dir, log: silentLogger, install: 'helm' });
  await lab.up();
}, 600_000);

afterAll(async () => {
  await lab?.down();
  if (dir) await rm(dir, { recursive: true, force: true });
});

describe('helm install onto real nodes', () => {
  it('every agent pod (agent and BIRD containers) and the operators are Ready; no flock process outside a container', async () => {
    const pods = await eventually(
      'the release running',
      async () => {
        const all = await listPods(lab, FLOCK_NAMESPACE, 'app.kubernetes.io/instance=flock');
        const ready = all.filter((p) =>
          (p.status?.['containerStatuses'] as { ready: boolean }[] | undefined)?.every(
            (c) => c.ready,
          ),
        );
        return ready.length === all.length && all.length === 4 ? all : undefined;
      },
      { timeoutMs: 180_000, intervalMs: 1_000 },
    );
    const agents = pods.filter((p) => p.metadata.name.startsWith('flock-agent-'));
    expect(new Set(agents.map((p) => p.spec.nodeName))).toEqual(
      new Set(lab.plans.map((p) => p.name)),
    );
    // Every flock process of every node is a container's: in the kubelet's kubepods tree, none
    // among the node's own daemons (its `system` cgroup).
    const flockIn = async (pids: number[]) => {
      const cmds = await Promise.all(
        pids.map((pid) => readFile(`/proc/${pid}/cmdline`, 'utf8').catch(() => '')),
      );
      return cmds
        .map((c) => c.split('\0'))
        .filter(
          (argv) =>
            argv.some((a) => a.endsWith('agent/dist/main.js')) || /\/bird$/.test(argv[0] ?? ''),
        )
        .map((argv) => argv.join(' '));
    };
    for (const node of lab.nodes) {
      expect(await flockIn(await node.cgroup.pids('system'))).toEqual([]);
      const inPods = await flockIn(await node.cgroup.pids('kubepods'));
      expect(inPods.some((c) => c.includes('agent/dist/main.js'))).toBe(true);
      expect(inPods.some((c) => c.includes('bird'))).toBe(true);
    }
  });

  it('every NodeConfig is Ready; workloads get addresses of their node; the router learns and reaches them', async () => {
    for (const plan of lab.plans) {
      const nc = await eventually(
        `${plan.name}'s NodeConfig Ready`,
        async () => {
          const obj = NodeConfig.parse(
            await lab.api!.request({ method: 'GET', path: objectPath(NODECONFIGS, plan.name) }),
          );
          return obj.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True')
            ? obj
            : undefined;
        },
        { timeoutMs: 60_000 },
      );
      const routes = await lab.router!.routes();
      for (const prefix of [nc.spec.cidr6, nc.spec.cidr4])
        expect(routes.find((r) => r.prefix === prefix)?.via).toEqual([plan.node6]);
    }
    await lab.apply(DEPLOYMENTS, sampleDeployment(2));
    const pods = await waitForPods(lab, 'default', 'app=web', 2);
    const state = (await readState(dir))!;
    for (const pod of pods)
      for (const { ip } of pod.status!.podIPs!)
        expect(await probeFromRouter(state, ip)).toEqual({ ok: true, reply: pod.metadata.name });
  });
});
