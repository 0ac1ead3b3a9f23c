// A plugin chained after flock on the lab's real nodes, set up as users set it up: the chart's
// cni.chainedPlugins puts bandwidth after flock in 10-flock.conflist, the node has the CNI
// project's plugins in /opt/cni/bin (LabNode copies scripts/build-cni-plugins.sh's), and
// containerd 2.4 runs the chain for every sandbox — STATUS to every plugin of the list every 5 s,
// so the lab coming up at all means the nodes are Ready with it. The pods'
// kubernetes.io/{ingress,egress}-bandwidth annotations then shape real TCP traffic between a pod
// and its node, measured against a pod without them; deleting the pods tears the chain down.
import { spawn } from 'node:child_process';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { run } from '@flock/exec';
import { PODS, objectPath } from '@flock/kube';
import { eventually, tcpRate, type NamespaceRunner } from '@flock/testkit';
import { describe, expect, it } from 'vitest';
import { workloadContainer } from '../core/plan.js';
import { inNetns, listPods, podNetns, waitForReadyPods, type LabPod } from '../core/workloads.js';
import { startLab } from '../core/test-lab.js';

/** The annotations' value (Kubernetes quantities, bits per second): 8 Mbit/s is 1 MB/s. */
const RATE = '8M';
const LIMIT = 1_000_000; // bytes per second

const { lab } = startLab({
  tmpPrefix: 'flock-lab-chain-',
  tools: ['bird', 'nsenter', 'flock-controlplane', 'kubectl', 'helm'],
  nodes: 1,
  install: 'helm',
  helmValues: [
    'cni.chainedPlugins[0].type=bandwidth',
    'cni.chainedPlugins[0].capabilities.bandwidth=true',
  ],
  clusterDns: false,
});

/** A bare pod of the lab workload on the (only) node, label app=chain. */
async function createPod(name: string, annotations: Record<string, string> = {}): Promise<void> {
  await lab.api!.request({
    method: 'POST',
    path: '/api/v1/namespaces/default/pods',
    body: {
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name, namespace: 'default', labels: { app: 'chain' }, annotations },
      spec: {
        nodeName: lab.plans[0]!.name,
        terminationGracePeriodSeconds: 1,
        containers: [workloadContainer('w')],
      },
    },
  });
}

/** Programs in the pod's network namespace (the host's mounts: this Node and the meter). */
async function inPod(pod: LabPod): Promise<NamespaceRunner> {
  const ref = await podNetns(lab, pod);
  return {
    exec: (file, args, options) => {
      const c = inNetns(ref, file, args);
      return run(c.file, c.args, options);
    },
    spawn: (file, args) => {
      const c = inNetns(ref, file, args);
      return spawn(c.file, c.args, { stdio: ['ignore', 'pipe', 'pipe'] });
    },
  };
}

const ip6 = (pod: LabPod) => pod.status!.podIPs!.map((i) => i.ip).find((ip) => ip.includes(':'))!;

describe('bandwidth chained after flock (cni.chainedPlugins), on a real node', () => {
  it('the node runs the chart’s conflist: flock, then bandwidth', async () => {
    const node = lab.nodes[0]!;
    const conflist = JSON.parse(
      await readFile(join(node.dir, 'cni-conf', '10-flock.conflist'), 'utf8'),
    ) as { plugins: { type: string }[] };
    expect(conflist.plugins.map((p) => p.type)).toEqual(['flock', 'bandwidth']);
  });

  it('the bandwidth annotations shape a pod’s traffic both ways; a pod without them is not shaped', async () => {
    await createPod('shaped', {
      'kubernetes.io/ingress-bandwidth': RATE,
      'kubernetes.io/egress-bandwidth': RATE,
    });
    await createPod('free');
    const pods = await waitForReadyPods(lab, 'default', 'app=chain', 2);
    const shaped = pods.find((p) => p.metadata.name === 'shaped')!;
    const free = pods.find((p) => p.metadata.name === 'free')!;
    const node = lab.nodes[0]!;
    const inNode: NamespaceRunner = {
      exec: (file, args, options) => node.ns.enter(file, args, options),
      spawn: (file, args) => node.ns.spawn(file, args),
    };
    const nodeIp = lab.plans[0]!.node6;
    const [shapedNs, freeNs] = [await inPod(shaped), await inPod(free)];
    const rates = {
      'node → shaped pod (ingress)': await tcpRate(inNode, shapedNs, ip6(shaped)),
      'shaped pod → node (egress)': await tcpRate(shapedNs, inNode, nodeIp),
      'node → free pod': await tcpRate(inNode, freeNs, ip6(free)),
      'free pod → node': await tcpRate(freeNs, inNode, nodeIp),
    };
    console.log(
      `limit ${RATE}bit/s:`,
      Object.fromEntries(
        Object.entries(rates).map(([k, v]) => [k, `${(v / 1e6).toFixed(3)} MB/s`]),
      ),
    );
    for (const r of [rates['node → shaped pod (ingress)'], rates['shaped pod → node (egress)']]) {
      expect(r).toBeGreaterThan(LIMIT * 0.7);
      expect(r).toBeLessThan(LIMIT * 1.3);
    }
    expect(rates['node → free pod']).toBeGreaterThan(rates['node → shaped pod (ingress)'] * 10);
    expect(rates['free pod → node']).toBeGreaterThan(rates['shaped pod → node (egress)'] * 10);
  });

  it('deleting the pods runs DEL through the chain: bandwidth’s ifb goes too', async () => {
    const node = lab.nodes[0]!;
    const ifbs = async () =>
      (
        JSON.parse(
          (await node.ns.enter('ip', ['-json', 'link', 'show', 'type', 'ifb'])).stdout,
        ) as unknown[]
      ).length;
    expect(await ifbs()).toBe(1); // the shaped pod's egress
    for (const p of await listPods(lab, 'default', 'app=chain'))
      await lab.api!.request({
        method: 'DELETE',
        path: objectPath(PODS, p.metadata.name, 'default'),
      });
    await eventually(
      'the pods gone and no ifb left',
      async () =>
        (await listPods(lab, 'default', 'app=chain')).length === 0 && (await ifbs()) === 0,
      { timeoutMs: 60_000, intervalMs: 500 },
    );
  });
});
