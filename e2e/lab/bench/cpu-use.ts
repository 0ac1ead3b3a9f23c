// CPU time a bench turn cost on the lab's nodes, by who spent it: the nodes' daemons (kubelet,
// containerd and its shims, the CNI plugins containerd runs, kube-proxy), flock's own pods (the
// agent with its BIRD, the BFD speaker, the operator) and everything else the kubelet runs (the
// workloads). Read from cpuacct (exited processes included), so a short-lived CNI plugin counts.
// Apart, inside those: the CNI plugin processes (what containerd reaped: the plugins, with what
// they started, and the shims' start-up commands, alike for every CNI), the agent container
// (the agent with its spawn server and every ip / nft / birdc it ran) and its BIRD container.
import { FLOCK_NAMESPACE } from '../core/helm.js';
import type { Lab } from '../core/lab.js';
import { PodList } from '../core/pod-list.js';
import { procCpu } from './proc-cpu.js';

interface NodeReading {
  system: number;
  kubepods: number;
  flock: number;
  agent: number;
  bird: number;
  /** containerd's reaped children, ns. */
  plugins: number;
}

export type CpuReading = NodeReading[];

/** CPU seconds between two readings, summed over the nodes. */
export interface CpuUse {
  daemons: number;
  flock: number;
  workloads: number;
  /** Inside daemons: containerd's reaped children (the CNI plugins and shim start-ups). */
  plugins: number;
  /** Inside flock: the agent containers (with everything they ran) and their BIRDs. */
  agent: number;
  bird: number;
}

const AGENT_POD = 'flock-agent';

/** Every node's counters now; the flock pods are those running at the time (by UID). */
export async function readCpu(lab: Lab): Promise<CpuReading> {
  const raw = await lab.api!.request({
    method: 'GET',
    path: `/api/v1/namespaces/${FLOCK_NAMESPACE}/pods`,
  });
  const flockPods = PodList.parse(raw).items;
  return Promise.all(
    lab.nodes.map(async (node, i) => {
      const need = async (sub: string) => {
        const ns = await node.cgroup.cpuNs(sub);
        if (ns === undefined) throw new Error(`${lab.plans[i]!.name}: no cpuacct for ${sub}`);
        return ns;
      };
      const reading: NodeReading = {
        system: await need('system'),
        kubepods: await need('kubepods'),
        flock: 0,
        agent: 0,
        bird: 0,
        plugins: 0,
      };
      for (const p of flockPods.filter((p) => p.spec.nodeName === lab.plans[i]!.name)) {
        const path = p.metadata.uid ? await node.cgroup.podPath(p.metadata.uid) : undefined;
        if (!path) continue;
        reading.flock += await need(path);
        if (p.metadata.labels?.['app.kubernetes.io/name'] !== AGENT_POD) continue;
        for (const c of p.status?.containerStatuses ?? []) {
          const id = c.containerID?.replace(/^containerd:\/\//, '');
          if (!id || (c.name !== 'agent' && c.name !== 'bird')) continue;
          // A container that restarted since the pod listing has no cgroup: not counted.
          const ns = await node.cgroup.cpuNs(`${path}/${id}`);
          if (ns !== undefined) reading[c.name] += ns;
        }
      }
      const containerd = node.containerd?.child.pid;
      const cpu = containerd === undefined ? undefined : await procCpu(containerd);
      if (!cpu) throw new Error(`${lab.plans[i]!.name}: containerd is not running`);
      reading.plugins = cpu.reaped * 1e6;
      return reading;
    }),
  );
}

export function cpuUsed(before: CpuReading, after: CpuReading): CpuUse {
  const sum = (f: (b: NodeReading, a: NodeReading) => number) =>
    before.reduce((s, b, i) => s + f(b, after[i]!), 0) / 1e9;
  return {
    daemons: sum((b, a) => a.system - b.system),
    flock: sum((b, a) => a.flock - b.flock),
    workloads: sum((b, a) => a.kubepods - b.kubepods - (a.flock - b.flock)),
    plugins: sum((b, a) => a.plugins - b.plugins),
    agent: sum((b, a) => a.agent - b.agent),
    bird: sum((b, a) => a.bird - b.bird),
  };
}

/**
 * The turns' CPU seconds, and per pod started what the CNI cost: the plugin processes plus, with
 * flock in either role, flock's pods (in a ptp turn they still run: they watch the new pods and
 * keep policy for them, but wire nothing). Ratios against ptp IPv4-only.
 */
export function cpuReport(turns: ReadonlyMap<string, readonly CpuUse[]>, pods: number): string {
  const cni = (u: CpuUse) => u.plugins + u.flock;
  const mean = (us: readonly CpuUse[], f: (u: CpuUse) => number) =>
    us.reduce((s, u) => s + f(u), 0) / us.length;
  const ref = turns.get('ptp IPv4-only');
  const lines = [
    `\nCPU seconds per turn (every node; daemons: kubelet, containerd, shims, CNI plugins, kube-proxy; plugins: what containerd reaped, inside daemons; agent and BIRD containers inside flock pods)`,
  ];
  for (const [name, uses] of turns)
    lines.push(
      `${name.padEnd(16)} ${uses
        .map(
          (u) =>
            `daemons ${u.daemons.toFixed(1)} (plugins ${u.plugins.toFixed(2)})  flock pods ${u.flock.toFixed(1)} (agent ${u.agent.toFixed(1)}, BIRD ${u.bird.toFixed(2)})  workloads ${u.workloads.toFixed(1)}`,
        )
        .join('  |  ')}`,
    );
  lines.push(
    `\nCPU ms per pod started, plugins + flock pods (mean of the turns; ratio to ptp IPv4-only):`,
  );
  for (const [name, uses] of turns) {
    const ms = (mean(uses, cni) / pods) * 1000;
    const ratio = ref ? ` ×${(mean(uses, cni) / mean(ref, cni)).toFixed(2)}` : '';
    lines.push(
      `${name.padEnd(16)} ${ms.toFixed(1)} ms${ratio} (plugins ${((mean(uses, (u) => u.plugins) / pods) * 1000).toFixed(1)}, agent ${((mean(uses, (u) => u.agent) / pods) * 1000).toFixed(1)}, BIRD ${((mean(uses, (u) => u.bird) / pods) * 1000).toFixed(1)}, the rest of flock's pods ${((mean(uses, (u) => u.flock - u.agent - u.bird) / pods) * 1000).toFixed(1)})`,
    );
  }
  return lines.join('\n');
}
