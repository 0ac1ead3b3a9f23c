// What the agent's cluster-wide caches cost in memory at 150,000 pods and 10,000 NetworkPolicies
// (issue 38 item 4; goal ≤ 200 MB RSS):
//   ./dev npx nx run agent:build-testing &&
//   ./dev node --max-old-space-size=8192 packages/agent/dist/bench/policy/cache-memory.js
// (--pods N, --policies N, --heap MiB, --peers peer-slices|pods). This process is the API server: @flock/kube's
// FakeApiServer filled with the objects as a real server serves them (cluster-objects.ts),
// behind real HTTP. The agent side is a child process with the image's V8 flags but the heap
// (--heap, default 512 MiB: the chart's 128 MiB does not hold 150,000 pods) and the real code
// over HttpTransport, with the image's malloc settings (core/image-env.ts): the pod cache, then the NetworkPolicy reconciler (namespace, policy and
// NodeConfig caches, peers' addresses checked against their node's ranges, a first pass with no
// local pod), then a pass over this node's pods (nft replaced by a
// no-op). It reports its own RSS and heap after a forced GC at each step, the first before any
// cache. Not a test: nothing passes or fails on a figure.
import { spawn } from 'node:child_process';
import { cpus, loadavg } from 'node:os';
import { performance } from 'node:perf_hooks';
import { createInterface } from 'node:readline';
import { silentLogger } from '@flock/api';
import {
  HttpTransport,
  NAMESPACES,
  NETWORK_POLICIES,
  NODECONFIGS,
  PEERSLICES,
  PODS,
} from '@flock/kube';
import { FakeApiServer, serveOverHttp } from '@flock/kube/testing';
import { AGENT_MALLOC_ENV } from '../../src/core/image-env.js';
import { clusterPodCache, nodePods, ownPodCache } from '../../src/node/pods.js';
import { policyCaches } from '../../src/policy/caches.js';
import { PeerRanges } from '../../src/policy/peer-ranges.js';
import { PolicyReconciler } from '../../src/policy/reconciler.js';
import { SlicePeers } from '../../src/policy/slice-peers.js';
import type { AllocationEntry } from '../../src/store/index.js';
import { loadPublisher } from '../fanout/publisher-module.js';
import {
  SHAPE,
  namespace,
  networkPolicy,
  nodeConfig,
  nodeName,
  peerSlices,
  pod,
} from './cluster-objects.js';
import { reporter, sampleLine, type Sample } from './memory-report.js';

const MiB = 1024 * 1024;

const arg = (name: string, fallback: number) => {
  const at = process.argv.indexOf(`--${name}`);
  return at > 0 ? Number(process.argv[at + 1]) : fallback;
};
/**
 * Where the agent's peers come from (--policy-peers): PeerSlices (default) or every Pod; or
 * `publisher`: no agent, the operator's PeerSlice publisher, which caches every pod of the
 * cluster and writes the slices (the server then starts with none).
 */
const peersFrom = (() => {
  const at = process.argv.indexOf('--peers');
  const v = at > 0 ? process.argv[at + 1] : 'peer-slices';
  if (v !== 'peer-slices' && v !== 'pods' && v !== 'publisher')
    throw new Error('--peers peer-slices|pods|publisher');
  return v;
})();

if (process.argv.includes('--agent')) {
  const url = process.argv[process.argv.indexOf('--agent') + 1] as string;
  await (peersFrom === 'publisher' ? publisherSide(url) : agentSide(url));
} else await serverSide();

async function serverSide(): Promise<void> {
  const pods = arg('pods', 150_000);
  const policies = arg('policies', 10_000);
  const heap = arg('heap', 512);
  const t0 = performance.now();
  const api = new FakeApiServer();
  for (let n = 0; n < SHAPE.namespaces; n++) api.putObject(NAMESPACES, namespace(n));
  for (let n = 0; n < SHAPE.nodes; n++) api.putObject(NODECONFIGS, nodeConfig(n));
  for (let i = 0; i < pods; i++) api.putObject(PODS, pod(i));
  // The operator's slices of those pods (what its publisher writes: up to 20 a namespace each).
  api.register(PEERSLICES);
  const publishing = peersFrom === 'publisher'; // the publisher writes them
  const slices = peerSlices(pods);
  if (!publishing) for (const slice of slices) api.putObject(PEERSLICES, slice);
  for (let p = 0; p < policies; p++)
    api.putObject(
      NETWORK_POLICIES,
      networkPolicy(p % SHAPE.namespaces, Math.floor(p / SHAPE.namespaces)),
    );
  api.compact(); // the watch history of the fill: not what a server keeps
  const bytes = JSON.stringify(pod(1)).length;
  console.log(
    `cluster: ${pods.toLocaleString('en-US')} pods (${bytes.toLocaleString('en-US')} bytes of JSON each), ` +
      `${policies.toLocaleString('en-US')} NetworkPolicies, ${SHAPE.namespaces} namespaces, ` +
      `${SHAPE.nodes} nodes; filled in ${((performance.now() - t0) / 1000).toFixed(1)} s`,
  );
  console.log(
    `machine: ${cpus().length} CPUs, load ${loadavg()
      .map((l) => l.toFixed(1))
      .join(' ')}`,
  );
  const front = await serveOverHttp(api);
  // The agent's image flags; the operator's image has none but its heap size.
  const flags = [
    ...(publishing ? [] : ['--lite-mode', '--max-semi-space-size=1']),
    `--max-old-space-size=${heap}`,
    '--expose-gc',
  ];
  console.log(
    `child: ${Object.entries(publishing ? {} : AGENT_MALLOC_ENV)
      .map(([k, v]) => `${k}=${v}`)
      .join(' ')} node ${flags.join(' ')}`,
  );
  console.log(
    publishing
      ? `the operator's PeerSlice publisher, writing the slices of ${SHAPE.namespaces} namespaces`
      : `agent peers from: ${peersFrom} (${slices.length} PeerSlices served)`,
  );
  const child = spawn(
    process.execPath,
    [...flags, import.meta.filename, '--agent', front.url, '--peers', peersFrom],
    {
      stdio: ['ignore', 'pipe', 'inherit'],
      env: { ...process.env, ...(publishing ? {} : AGENT_MALLOC_ENV), NODE_OPTIONS: '' },
    },
  );
  const samples: Sample[] = [];
  createInterface({ input: child.stdout }).on('line', (line) => {
    const sample = JSON.parse(line) as Sample;
    samples.push(sample);
    console.log(sampleLine(sample));
  });
  const code = await new Promise<number | null>((r) => child.once('exit', r));
  await front.close();
  const base = samples[0];
  const last = samples.at(-1);
  if (code !== 0 || !base || !last) {
    console.log(`the child failed (exit ${String(code)}): a heap of ${heap} MiB is too small?`);
    process.exitCode = 1;
    return;
  }
  console.log(
    `${publishing ? 'the publisher' : 'caches and a pass'}: +${(last.rssMiB - base.rssMiB).toFixed(1)} MiB RSS, ` +
      `+${(last.heapMiB - base.heapMiB).toFixed(1)} MiB heap over the process before them; ` +
      `total RSS ${last.rssMiB.toFixed(1)} MiB = ${((last.rssMiB * MiB) / 1e6).toFixed(0)} MB` +
      (publishing ? '' : ' (goal ≤ 200 MB)'),
  );
}

/** The operator's publisher (from its build): its pod cache synced, then every slice written. */
async function publisherSide(url: string): Promise<void> {
  const report = reporter();
  report('before any cache');
  const PeerSlicePublisher = await loadPublisher();
  const transport = new HttpTransport({ server: url });
  const publisher = new PeerSlicePublisher({ transport, logger: silentLogger });
  publisher.start();
  await publisher.pods.synced;
  report('pod cache synced', publisher.pods.size);
  await publisher.setLeading(true);
  const expected = publisher.pods.list().filter((p) => p.peer !== undefined).length;
  for (;;) {
    const n = publisher.slices.list().reduce((a, sl) => a + sl.spec.pods.length, 0);
    if (n >= expected) break;
    await new Promise((r) => setTimeout(r, 500));
  }
  report(`+ every slice written (${expected.toLocaleString('en-US')} pods)`, publisher.slices.size);
  await publisher.stop();
}

async function agentSide(url: string): Promise<void> {
  const report = reporter();
  report('before any cache');
  const transport = new HttpTransport({ server: url });
  const fromSlices = peersFrom === 'peer-slices';
  const pods = fromSlices
    ? ownPodCache(transport, silentLogger, nodeName(0))
    : clusterPodCache(transport, silentLogger, undefined, undefined, nodeName(0));
  const peers = fromSlices
    ? new SlicePeers({ own: pods, nodeName: nodeName(0), transport, logger: silentLogger })
    : pods;
  pods.start();
  if (peers instanceof SlicePeers) await peers.start();
  await peers.synced;
  report(fromSlices ? 'own pods and PeerSlices synced' : 'pod cache synced', peers.list().length);
  const caches = policyCaches(transport, peers, silentLogger);
  let entries: AllocationEntry[] = [];
  const reconciler = new PolicyReconciler({
    caches,
    store: { entries: () => entries },
    pods: { get: async () => undefined },
    applier: { applyTable: async () => 'replace', forget: () => undefined },
    logger: silentLogger,
    resyncMs: 3_600_000,
    // Peers' addresses checked against their node's ranges, as the agent does.
    peerRanges: new PeerRanges({ transport, logger: silentLogger }),
  });
  reconciler.start();
  await reconciler.waitForSync(600_000);
  while (reconciler.lastResult === undefined) await new Promise((r) => setTimeout(r, 50));
  report(
    '+ namespace and policy caches',
    peers.list().length + caches.namespaces.size + caches.policies.size,
  );
  // This node's pods as the allocation store holds them (committed, their addresses).
  entries = nodePods(pods, nodeName(0))
    .list()
    .map((p, i) => ({
      containerID: `c${i}`,
      ifname: 'eth0',
      namespace: p.metadata.namespace,
      pod: p.metadata.name,
      podUID: p.metadata.uid ?? '',
      ip6: p.status?.podIPs?.[0]?.ip ?? '',
      ip4: p.status?.podIPs?.[1]?.ip ?? '',
      pinned: false,
      anycast: [],
      state: 'committed',
      createdAt: '2026-12-01T08:00:00.000Z',
      claimKey: `Pod/${p.metadata.name}`,
    }));
  const result = await reconciler.reconcile();
  report(`+ a pass over ${entries.length} local pods (${result?.rules ?? 0} rules)`);
  await reconciler.stop();
  await pods.stop();
  if (peers instanceof SlicePeers) await peers.stop();
}
