// CPU time a bench turn cost on the lab's nodes, by who spent it: the nodes' daemons (kubelet,
// containerd and its shims, the CNI plugins containerd runs, kube-proxy), flock's own pods (the
// agent with its BIRD, the BFD speaker, the operator) and everything else the kubelet runs (the
// workloads). Read from cpuacct (exited processes included), so a short-lived CNI plugin counts.
// Apart, inside those: the CNI plugin processes (what containerd reaped: the plugins, with what
// they started, and the shims' start-up commands, alike for every CNI), the agent container
// (the agent with its spawn server and every ip / nft / birdc it ran) and its BIRD container;
// inside the agent container, its spawn server's own time and what the server reaped (the
// commands) from /proc, the rest being the agent's main process.
import { readFile } from 'node:fs/promises';
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
  /** The agent's spawn server (pid; its own and its reaped children's ns), if found. */
  spawner?: { pid: number; own: number; reaped: number };
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
  /** Inside agent: its spawn server's own time, and the commands it ran (NaN when it restarted). */
  spawnServer: number;
  commands: number;
}

const SPAWN_SERVER = 'spawn-server-child';

/** The spawn server among a container's processes (its command line names its script). */
async function spawner(pids: readonly number[]): Promise<NodeReading['spawner']> {
  for (const pid of pids) {
    const cmdline = await readFile(`/proc/${pid}/cmdline`, 'utf8').catch(() => '');
    if (!cmdline.includes(SPAWN_SERVER)) continue;
    const cpu = await procCpu(pid);
    if (cpu) return { pid, own: cpu.own * 1e6, reaped: cpu.reaped * 1e6 };
  }
  return undefined;
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
          if (c.name === 'agent')
            reading.spawner = await spawner(await node.cgroup.pids(`${path}/${id}`));
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
    ...spawnerUse(before, after),
  };
}

/** The spawn servers' share, when every node's is the same process in both readings. */
function spawnerUse(before: CpuReading, after: CpuReading) {
  const same = before.every((b, i) => b.spawner && b.spawner.pid === after[i]!.spawner?.pid);
  if (!same) return { spawnServer: NaN, commands: NaN };
  const sum = (f: (s: NonNullable<NodeReading['spawner']>) => number) =>
    before.reduce((t, b, i) => t + f(after[i]!.spawner!) - f(b.spawner!), 0) / 1e9;
  return { spawnServer: sum((s) => s.own), commands: sum((s) => s.reaped) };
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
    const perPod = (f: (u: CpuUse) => number) => ((mean(uses, f) / pods) * 1000).toFixed(1);
    lines.push(
      `${name.padEnd(16)} ${ms.toFixed(1)} ms${ratio} (plugins ${perPod((u) => u.plugins)}, agent ${perPod((u) => u.agent)}: main ${perPod((u) => u.agent - u.spawnServer - u.commands)}, spawn server ${perPod((u) => u.spawnServer)}, commands ${perPod((u) => u.commands)}; BIRD ${perPod((u) => u.bird)}, the rest of flock's pods ${perPod((u) => u.flock - u.agent - u.bird)})`,
    );
  }
  return lines.join('\n');
}
