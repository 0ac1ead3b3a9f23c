// The API fan-out of flock's agents, against the real API server (issue 40): every agent
// list-watches what its design watches (designs.ts; `today`: every Pod, Namespace,
// NetworkPolicy, NodeConfig, ... and with the ClusterNetworkPolicy CRD every Node), so every pod
// change is sent to every agent. On the test control plane (etcd + kube-apiserver, no
// controllers, no kubelet) it writes N Nodes, P pods a node (bound, with addresses), namespaces,
// NetworkPolicies and NodeConfigs; then for each design and each K in --agents: K watcher
// processes (watcher.ts, one agent's watches each, as nodes 0..K-1) started together — time
// until all synced, the API server's CPU for it — then --churn-seconds of pod status and label
// writes at --rate — the API server's CPU per second and RSS (/proc), events and bytes (rchar)
// received per agent per second, the lag from each write to the last agent seeing it. A churn
// with no watcher first: what the writes alone cost. Figures, not assertions. A design with a
// peer relay (`peer-relay`) has the relay beside the publisher (relay-setup.ts: its certificate,
// the agents' ServiceAccount and token, its EndpointSlice), its CPU measured as the API server's.
// --kill-relay-at S: in each churn the relay is killed S seconds in and another started (a crash
// under load: the lag and the writes some agent missed say what it cost; relay CPU not counted).
//   ./dev npx tsc -b packages/agent/tsconfig.testing.json &&
//   ./dev node packages/agent/dist/bench/fanout/run.js [--nodes 1000 --pods-per-node 30
//     --agents 10,50,100 --churn-seconds 60 --cnp on]            (--help: options.ts)
import { cpus, loadavg } from 'node:os';
import { baseline, round, type Round, type Setting } from './measure.js';
import { startBenchCluster } from './cluster.js';
import { parseOptions } from './options.js';
import { populate } from './populate.js';
import { byWatch, churnTable, model, syncTable } from './report.js';
import { designNamed } from './designs.js';
import { relayAccess, startRelay, type RunningRelay } from './relay-setup.js';
import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { rm } from 'node:fs/promises';
import { join } from 'node:path';
import { PEERSLICES, resourcePath, type KubeTransport } from '@flock/kube';
import { eventually } from '@flock/testkit';

const PUBLISHER = join(import.meta.dirname, 'publisher.js');

/** The operator's PeerSlice publisher alone, leading (publisher.ts). */
function startPublisher(kubeconfig: string, workers: number | undefined): ChildProcess {
  const args = [PUBLISHER, '--kubeconfig', kubeconfig];
  if (workers !== undefined) args.push('--workers', String(workers));
  return spawn(process.execPath, args, { stdio: ['ignore', 'inherit', 'inherit'] });
}

/** Wait until the publisher's slices hold every pod (its first pass over the cluster). */
async function published(api: KubeTransport, pods: number): Promise<void> {
  const t0 = Date.now();
  await eventually(
    `PeerSlices of all ${pods} pods`,
    async () => {
      const list = (await api.request({ method: 'GET', path: resourcePath(PEERSLICES) })) as {
        items: { spec: { pods: unknown[] } }[];
      };
      const n = list.items.reduce((a, s) => a + s.spec.pods.length, 0);
      if (n < pods) throw new Error(`${n} of ${pods}`);
      return true;
    },
    { timeoutMs: 600_000, intervalMs: 2_000 },
  );
  console.log(
    `publisher: slices of all ${pods} pods after ${((Date.now() - t0) / 1000).toFixed(1)} s`,
  );
}

const o = parseOptions(process.argv.slice(2));
for (const d of o.designs) designNamed(d); // an unknown name fails before anything starts
const load = () =>
  loadavg()
    .map((l) => l.toFixed(1))
    .join(' ');
console.log(
  `fan-out benchmark: ${o.nodes} nodes × ${o.podsPerNode} pods, ${o.namespaces} namespaces × ` +
    `${o.policiesPerNamespace} NetworkPolicies, ClusterNetworkPolicy CRD ${o.cnp ? 'on' : 'off'}; ` +
    `agents ${o.agents.join(', ')}; churn ${o.churnSeconds} s at ${o.rate} writes/s; ` +
    `node ${process.version}, ${cpus().length} CPUs, load ${load()}`,
);
const cluster = await startBenchCluster(o.cnp);
const rounds: Round[] = [];
try {
  console.log('creating the cluster through the API:');
  const pods = await populate(cluster.api, o);
  const setting: Setting = {
    api: cluster.api,
    apiserverPid: cluster.apiserverPid,
    kubeconfig: cluster.cp.kubeconfigPath,
    pods,
    churn: { rate: o.rate, seconds: o.churnSeconds, concurrency: o.concurrency },
  };
  console.log('churn with no watcher...');
  rounds.push(await baseline(setting));
  for (const design of o.designs) {
    const arm = designNamed(design);
    // The operator's publisher beside the cluster while the design's rounds run.
    const publisher = arm.publisher
      ? startPublisher(cluster.cp.kubeconfigPath, o.publisherWorkers)
      : undefined;
    let relay: RunningRelay | undefined;
    const access = arm.relay ? await relayAccess(cluster.cp, cluster.api) : undefined;
    try {
      if (publisher) await published(cluster.api, pods.length);
      // The relay once the slices are there: the agents' sync is not its own.
      if (access)
        relay = await startRelay(
          cluster.cp.kubeconfigPath,
          cluster.api,
          access,
          arm.relayCoalesceMs,
        );
      const here: Setting =
        relay && access ? { ...setting, relay: { pid: relay.pid, files: access } } : setting;
      if (relay && access && o.killRelayAt !== undefined)
        here.relayCrash = {
          atMs: o.killRelayAt * 1000,
          // A crash, as a node's death would be: SIGKILL, its EndpointSlice left as it was until
          // the new one serves every slice and takes it over (what the Deployment does).
          crash: async () => {
            const t0 = Date.now();
            process.kill(relay!.pid, 'SIGKILL');
            relay = await startRelay(
              cluster.cp.kubeconfigPath,
              cluster.api,
              access,
              arm.relayCoalesceMs,
            );
            here.relay = { pid: relay.pid, files: access };
            console.log(
              `relay killed ${o.killRelayAt} s into the churn; another serving after ` +
                `${((Date.now() - t0) / 1000).toFixed(1)} s`,
            );
          },
        };
      for (const k of o.agents) {
        console.log(`${design}: ${k} agents (load ${load()})...`);
        rounds.push(await round(here, design, k));
        // The figures so far: a later round that fails (a sync past its limit) keeps them.
        console.log(`${syncTable(rounds)}\n${churnTable(rounds)}`);
      }
    } finally {
      await relay?.stop();
      if (access) await rm(access.dir, { recursive: true, force: true });
      publisher?.kill('SIGTERM');
      if (publisher) await once(publisher, 'exit');
    }
  }
} finally {
  await cluster.cp.stop();
}
console.log(syncTable(rounds));
console.log(churnTable(rounds));
console.log(`\nby watch:\n${byWatch(rounds)}\n`);
console.log(model(rounds));
