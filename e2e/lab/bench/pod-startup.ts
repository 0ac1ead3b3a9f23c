#!/usr/bin/env node
// Lab benchmark: pod start-up through the real kubelet and containerd, flock (installed by its
// chart from its images) beside Debian's reference plugins (ptp + host-local, IPv4 only and
// dual-stack) as the nodes' CNI, in one lab, one run:
//   a Deployment of PODS pods (PODS/3 a node, spread) is created → each pod Ready (the API
//   polled every 50 ms) → each pod's addresses answer from the router (probes/reach.ts in the
//   router's namespace, probing every 50 ms); per pod: created → Ready, created → reachable
//   (every address), Ready → reachable.
// After an unrecorded warm-up turn, the candidates take turns (flock, ptp IPv4, ptp dual-stack;
// each --repeat starts one later), the Deployment deleted and every pod gone between turns.
// Each turn's CPU time on the nodes is counted by who spent it (cpu-use.ts). For ptp the router
// gets static routes to each node's host-local ranges (flock's come over BGP). Last: agent
// container start → Ready, for an agent pod deleted and re-created by the DaemonSet on each node.
//   node e2e/dist/lab/bench/pod-startup.js [--pods 60] [--repeat 1]
import { copyFile, mkdtemp, rm, unlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as delay } from 'node:timers/promises';
import { createLogger } from '@flock/kube';
import { eventually, summarize, table } from '@flock/testkit';
import { FLOCK_NAMESPACE } from '../core/helm.js';
import { Lab } from '../core/lab.js';
import { isPodReady, PodList, type LabPod } from '../core/pod-list.js';
import { labDeployment } from '../core/plan.js';
import { startReach } from '../probes/reach-watch.js';
import { DEPLOYMENTS } from '../core/workloads.js';
import { cpuReport, cpuUsed, readCpu, type CpuUse } from './cpu-use.js';
import { describeCounters, readAgentCounters } from './agent-counters.js';
import { describeNotes, podEvents, watchTurn } from './turn-notes.js';
import { intOption } from './args.js';

const NODES = 3;
const PODS = intOption('--pods', 60, 150);
const REPEAT = intOption('--repeat', 1, 5);
const PTP_CONF = '00-bench-ptp.conflist'; // sorts before 10-flock.conflist: the runtime takes it
const PTP_PLUGINS = ['ptp', 'host-local'];
const DEBIAN_CNI = '/usr/lib/cni';

type Candidate = 'flock' | 'ptp IPv4-only' | 'ptp dual-stack';
const ptpRanges = (i: number, dual: boolean) => [
  [{ subnet: `10.244.${i}.0/24` }],
  ...(dual ? [[{ subnet: `2001:db8:244:${i}::/64` }]] : []),
];

async function pods(lab: Lab, namespace: string, selector: string): Promise<LabPod[]> {
  const raw = await lab.api!.request({
    method: 'GET',
    path: `/api/v1/namespaces/${namespace}/pods`,
    query: { labelSelector: selector },
  });
  return PodList.parse(raw).items;
}

/** The nodes' CNI: flock's conflist, or ptp's sorted before it. */
async function useCni(lab: Lab, candidate: Candidate): Promise<void> {
  for (const [i, node] of lab.nodes.entries()) {
    const path = join(node.dir, 'cni-conf', PTP_CONF);
    if (candidate === 'flock') await unlink(path).catch(() => undefined);
    else
      await writeFile(
        path,
        JSON.stringify({
          cniVersion: '1.0.0',
          name: 'bench-ptp',
          plugins: [
            {
              type: 'ptp',
              ipMasq: false,
              ipam: {
                type: 'host-local',
                // On the node's own disk (the host's /var/lib/cni is shared by every node).
                dataDir: '/var/lib/flock/bench-host-local',
                ranges: ptpRanges(i + 1, candidate === 'ptp dual-stack'),
                routes: [{ dst: '0.0.0.0/0' }, { dst: '::/0' }],
              },
            },
          ],
        }),
      );
  }
  // containerd re-reads the directory on change; wait until every node's runtime has it.
  for (const node of lab.nodes)
    await eventually(
      `${node.plan.name}'s containerd on ${candidate}`,
      async () => {
        const info = (await node.crictl(['info'])).stdout;
        return info.includes('bench-ptp') === (candidate !== 'flock') || undefined;
      },
      { timeoutMs: 30_000, intervalMs: 200 },
    );
}

async function turn(lab: Lab, candidate: Candidate, count = PODS) {
  await useCni(lab, candidate);
  const reach = startReach(lab);
  const ready = new Map<string, number>();
  const addresses = new Map<string, string[]>();
  const nodeOf = new Map<string, string>();
  const cpuBefore = await readCpu(lab);
  const countersBefore = await readAgentCounters(lab);
  const watch = watchTurn(lab);
  const t0 = Date.now();
  await lab.apply(
    DEPLOYMENTS,
    labDeployment({
      name: 'startup',
      replicas: count,
      podSpec: {
        topologySpreadConstraints: [
          {
            maxSkew: 1,
            whenUnsatisfiable: 'DoNotSchedule',
            topologyKey: 'kubernetes.io/hostname',
            labelSelector: { matchLabels: { app: 'startup' } },
          },
        ],
      },
    }),
  );
  const want = candidate === 'ptp IPv4-only' ? 1 : 2;
  const deadline = Date.now() + 600_000;
  let nextReport = Date.now() + 15_000;
  try {
    for (;;) {
      const list = await pods(lab, 'default', 'app=startup').catch(() => []);
      const now = Date.now();
      for (const p of list) {
        const ips = (p.status?.podIPs ?? []).map((i) => i.ip);
        if (ips.length && !addresses.has(p.metadata.name)) {
          addresses.set(p.metadata.name, ips);
          for (const ip of ips) reach.add(ip);
          nodeOf.set(p.metadata.name, p.spec.nodeName ?? '?');
        }
        if (isPodReady(p) && !ready.has(p.metadata.name)) ready.set(p.metadata.name, now);
      }
      const reachedAll = [...addresses.values()].filter((ips) =>
        ips.every((ip) => reach.reached.has(ip)),
      ).length;
      if (ready.size === count && reachedAll === count) break;
      if (now > nextReport) {
        console.error(`${candidate}: ${ready.size} Ready, ${reachedAll} reachable of ${count}`);
        nextReport = now + 15_000;
      }
      if (now > deadline) {
        const stuck = list.filter((p) => !isPodReady(p) || !addresses.has(p.metadata.name));
        const notes = (
          await podEvents(lab, 'default', new Set(stuck.map((p) => p.metadata.name)))
        ).map((e) => `${e.involvedObject.name}: ${e.reason}: ${e.message}`);
        throw new Error(
          `${candidate}: ${ready.size} Ready, ${reachedAll} reachable of ${count}; not done: ${JSON.stringify(
            stuck.map((p) => ({
              name: p.metadata.name,
              node: p.spec.nodeName,
              ips: p.status?.podIPs,
              containers: p.status?.containerStatuses,
            })),
          )}; their events:\n${notes.slice(-40).join('\n')}`,
        );
      }
      await delay(50);
    }
  } catch (e) {
    // The lab goes down after a failed turn: stop the prober and the route monitor first.
    reach.stop();
    watch.cancel();
    throw e;
  }
  reach.stop();
  const cpu = cpuUsed(cpuBefore, await readCpu(lab));
  const counters = describeCounters(countersBefore, await readAgentCounters(lab), count);
  const notes = await watch.stop('default', new Set(addresses.keys()));
  const rows = [...addresses].map(([name, ips]) => {
    if (ips.length !== want) throw new Error(`${candidate}: ${name} has ${ips.join(', ')}`);
    const reached = Math.max(...ips.map((ip) => reach.reached.get(ip)!));
    return {
      node: nodeOf.get(name)!,
      ready: ready.get(name)! - t0,
      reachable: reached - t0,
      after: reached - ready.get(name)!,
    };
  });
  await lab.api!.request({
    method: 'DELETE',
    path: '/apis/apps/v1/namespaces/default/deployments/startup',
    body: { propagationPolicy: 'Background' },
  });
  await eventually(
    'the start-up pods gone',
    async () => (await pods(lab, 'default', 'app=startup')).length === 0 || undefined,
    { timeoutMs: 300_000, intervalMs: 500 },
  );
  const toReady = summarize(rows.map((r) => r.ready));
  const toReach = summarize(rows.map((r) => r.after));
  const perNode = new Map<string, number>();
  for (const node of nodeOf.values()) perNode.set(node, (perNode.get(node) ?? 0) + 1);
  const byNode = [...perNode.keys()]
    .sort()
    .map((n) => `${n} ${summarize(rows.filter((r) => r.node === n).map((r) => r.after)).p99}`)
    .join(', ');
  console.log(
    `${candidate}: ${count} pods (${[...perNode].map(([n, c]) => `${n} ${c}`).join(', ')}), all Ready and reachable ${Math.max(...rows.map((r) => r.reachable))} ms after the Deployment; created → Ready p50 ${toReady.p50} / p99 ${toReady.p99} ms, Ready → reachable p50 ${toReach.p50} / p99 ${toReach.p99} ms (p99 by node: ${byNode}); ${describeNotes(notes, t0)}; the agents: ${counters}`,
  );
  return { rows, cpu };
}

/** Agent container start → pod Ready, for an agent pod re-created by the DaemonSet. */
async function agentRestarts(lab: Lab): Promise<number[]> {
  const out: number[] = [];
  const selector = 'app.kubernetes.io/name=flock-agent';
  for (const node of lab.plans) {
    const before = (await pods(lab, FLOCK_NAMESPACE, selector)).find(
      (p) => p.spec.nodeName === node.name,
    )!;
    await lab.api!.request({
      method: 'DELETE',
      path: `/api/v1/namespaces/${FLOCK_NAMESPACE}/pods/${before.metadata.name}`,
    });
    const readyPod = await eventually(
      `a new agent pod Ready on ${node.name}`,
      async () =>
        (await pods(lab, FLOCK_NAMESPACE, selector)).find(
          (p) =>
            p.spec.nodeName === node.name &&
            p.metadata.name !== before.metadata.name &&
            isPodReady(p),
        ),
      { timeoutMs: 180_000, intervalMs: 50 },
    );
    const readyAt = Date.now();
    const started = readyPod.status?.containerStatuses?.find((c) => c.name === 'agent')?.state
      ?.running?.startedAt;
    // startedAt has whole seconds: the figure is ± 1 s.
    out.push(readyAt - Date.parse(started!));
  }
  return out;
}

const dir = await mkdtemp(join(tmpdir(), 'flock-bench-startup-'));
const lab = new Lab({
  nodes: NODES,
  dir,
  log: createLogger('lab', 'warn'),
  install: 'helm',
  // A busy machine can delay heartbeats: no node is declared dead (and its pods evicted) mid-run.
  nodeFailureDetection: 'default',
  // flock as the chart installs it: its 30 s resync, not the lab's 5 s (tests converge faster).
  helmValues: ['agent.resync=30s'],
  progress: (l) => console.error(`lab: ${l}`),
});
// Ctrl-C or a kill: take the lab down (its namespaces, cgroups and processes) before leaving.
for (const signal of ['SIGINT', 'SIGTERM'] as const)
  process.once(signal, () => {
    console.error(`${signal}: taking the lab down`);
    void lab.down().finally(() => process.exit(130));
  });
try {
  await lab.up();
  for (const [i, node] of lab.nodes.entries()) {
    for (const p of PTP_PLUGINS) await copyFile(join(DEBIAN_CNI, p), join(node.dir, 'cni-bin', p));
    await lab.router!.ns.exec('ip', [
      'route',
      'replace',
      `10.244.${i + 1}.0/24`,
      'via',
      node.plan.node4,
    ]);
    await lab.router!.ns.exec('ip', [
      ...['-6', 'route', 'replace', `2001:db8:244:${i + 1}::/64`, 'via', node.plan.node6],
    ]);
  }
  const results = new Map<Candidate, { ready: number; reachable: number; after: number }[]>();
  const cpu = new Map<Candidate, CpuUse[]>();
  const candidates: Candidate[] = ['flock', 'ptp IPv4-only', 'ptp dual-stack'];
  // Unrecorded: the first pods after bring-up find cold caches (the image's files, the
  // runtime's and the kubelet's first sandboxes) that no later turn pays again.
  await turn(lab, 'flock', NODES * 3);
  // Each repeat starts with the next candidate, so that no one always goes first (after the
  // agents' restart) or last.
  for (let r = 0; r < REPEAT; r++)
    for (const c of [...candidates.slice(r % 3), ...candidates.slice(0, r % 3)]) {
      const t = await turn(lab, c);
      results.set(c, [...(results.get(c) ?? []), ...t.rows]);
      cpu.set(c, [...(cpu.get(c) ?? []), t.cpu]);
    }
  // Last: restarted agents resync (a full policy pass, BIRD's graceful restart) while the next
  // turn would start, which would burden whoever went first.
  const agent = await agentRestarts(lab);
  const rows = (f: 'ready' | 'reachable' | 'after') =>
    [...results].map(([name, rs]) => ({ name, ms: rs.map((x) => x[f]) }));
  const refs = ['ptp IPv4-only', 'ptp dual-stack'];
  console.log(`\n${table('Deployment created → pod Ready', rows('ready'), refs)}`);
  console.log(
    `\n${table('Deployment created → pod reachable from the router', rows('reachable'), refs)}`,
  );
  console.log(
    `\n${table('pod Ready → reachable from the router (negative: before Ready)', rows('after'), [])}`,
  );
  console.log(cpuReport(cpu, PODS));
  const a = summarize(agent);
  console.log(
    `\nagent container start → agent pod Ready (DaemonSet re-creating a deleted pod, ±1 s): n=${a.n} p50 ${a.p50} ms, max ${a.max} ms`,
  );
} finally {
  await lab.down();
  await rm(dir, { recursive: true, force: true });
}
