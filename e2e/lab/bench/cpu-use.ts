// CPU time a bench turn cost on the lab's nodes, by who spent it: the nodes' daemons (kubelet,
// containerd and its shims, the CNI plugins containerd runs, kube-proxy), flock's own pods (the
// agent with its BIRD, the BFD speaker, the operator) and everything else the kubelet runs (the
// workloads). Read from cpuacct (exited processes included), so a short-lived CNI plugin counts.
import { FLOCK_NAMESPACE } from '../core/helm.js';
import type { Lab } from '../core/lab.js';
import { PodList } from '../core/pod-list.js';

interface NodeReading {
  system: number;
  kubepods: number;
  flock: number;
}

export type CpuReading = NodeReading[];

/** CPU seconds between two readings, summed over the nodes. */
export interface CpuUse {
  daemons: number;
  flock: number;
  workloads: number;
}

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
      let flock = 0;
      for (const p of flockPods.filter((p) => p.spec.nodeName === lab.plans[i]!.name)) {
        const path = p.metadata.uid ? await node.cgroup.podPath(p.metadata.uid) : undefined;
        if (path) flock += await need(path);
      }
      return { system: await need('system'), kubepods: await need('kubepods'), flock };
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
  };
}
