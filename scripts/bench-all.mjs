// `npm run bench`: every benchmark of the project, one after another, each printing its own
// figures (docs/benchmarks.md records them). Benchmarks are commands that print figures, never
// timed tests: a bench "fails" only when it cannot run (a missing tool, not root, a crash).
//   npm run bench                      all of them
//   npm run bench -- cni operator      only those whose name contains one of the words
// Several need root (network namespaces, nftables) and the test control plane (./dev setup);
// they say so and fail; the others still run. Ends with one line per bench: ok/FAILED, time.
import { spawnSync } from 'node:child_process';

const root = new URL('..', import.meta.url).pathname;
const only = process.argv.slice(2);
const env = { ...process.env, NX_DAEMON: 'false', NX_NO_CLOUD: 'true', NX_TUI: 'false' };

const npmBench = (workspace, script = 'bench') => ['npm', ['run', script, '-w', workspace]];
const buildAgent = ['npx', ['tsc', '-b', 'packages/agent/tsconfig.testing.json']];

// [name, ...commands]; a bench's commands run in order and stop at the first failure.
const benches = [
  ['ipam: allocation, carving', npmBench('@flock/ipam')],
  ['bird: config render', npmBench('@flock/bird')],
  ['kube: cache, work queue, relist', npmBench('@flock/kube')],
  // NetworkPolicy translate/render/apply, one-pod change, per-packet cost (root).
  ['netpol: render, apply, per-packet', npmBench('@flock/netpol')],
  // ClusterNetworkPolicy tiers: translate/render/apply at 100 × 10,000, one-pod changes (root).
  [
    'netpol: ClusterNetworkPolicy, one-pod change',
    ['npx', ['tsc', '-b', 'packages/netpol/tsconfig.testing.json']],
    ['node', ['packages/netpol/dist/bench/cluster-run.js']],
  ],
  // hostPort DNAT: new UDP flows/s and one flow's packets/s through 1 mapping, 1,000 in flock's
  // maps, 1,000 sequential rules, no DNAT, interleaved (root, python3, conntrack).
  [
    'netpol: hostPort DNAT, 1,000 mappings vs 1 (root)',
    ['npx', ['tsc', '-b', 'packages/netpol/tsconfig.testing.json']],
    ['node', ['packages/netpol/dist/bench/hostport-dnat.js']],
  ],
  // Private IPv4: new UDP flows/s and one flow's packets/s, routed vs SNAT, interleaved (root,
  // python3, conntrack).
  [
    'netpol: private IPv4 SNAT vs routed (root)',
    ['npx', ['tsc', '-b', 'packages/netpol/tsconfig.testing.json']],
    ['node', ['packages/netpol/dist/bench/snat.js']],
  ],
  ['agent: datapath setup/teardown (root)', npmBench('@flock/agent')],
  // NAT64 through Tayga (userspace) vs IPv4 routed and SNAT: TCP throughput, Tayga's CPU per
  // Gbit, new connections/s (root, tayga, iperf3).
  [
    'agent: NAT64 (Tayga) vs IPv4 (root)',
    buildAgent,
    ['node', ['packages/agent/dist/bench/nat64/run.js']],
  ],
  // Private IPv4 between nodes: translated to IPv6 and back (Tayga on each node) vs the pods'
  // IPv6, routed: TCP throughput, the translators' CPU per Gbit, new connections/s (root, tayga,
  // iperf3).
  [
    'agent: private IPv4 between nodes (SIIT) vs IPv6 (root)',
    buildAgent,
    ['node', ['packages/agent/dist/bench/siit/run.js']],
  ],
  [
    'agent: NetworkPolicy pass from the caches',
    buildAgent,
    ['node', ['packages/agent/dist/bench/policy/pass-bench.js']],
  ],
  ['agent: announcement plan', buildAgent, ['node', ['packages/agent/dist/bench/routing/plan.js']]],
  // The caches and a policy pass at 150,000 pods and 10,000 policies: the agent process's memory.
  [
    'agent: memory at 150,000 pods (peers from PeerSlices)',
    buildAgent,
    ['node', ['--max-old-space-size=8192', 'packages/agent/dist/bench/policy/cache-memory.js']],
  ],
  [
    'agent: memory at 150,000 pods (peers from every Pod)',
    buildAgent,
    [
      'node',
      [
        '--max-old-space-size=8192',
        'packages/agent/dist/bench/policy/cache-memory.js',
        '--peers',
        'pods',
      ],
    ],
  ],
  // The operator's PeerSlice publisher at 150,000 pods: its caches' memory (loaded from its build).
  [
    'operator: PeerSlice publisher memory at 150,000 pods',
    ['npm', ['run', 'build']],
    buildAgent,
    [
      'node',
      [
        '--max-old-space-size=8192',
        'packages/agent/dist/bench/policy/cache-memory.js',
        '--peers',
        'publisher',
      ],
    ],
  ],
  // The peer relay at 150,000 pods, a full log and 50 / 200 agents taking a snapshot at once.
  [
    'operator: peer relay memory at 150,000 pods',
    ['npm', ['run', 'build']],
    buildAgent,
    ['node', ['packages/agent/dist/bench/fanout/relay-memory.js']],
  ],
  // One Service change at 100 / 1,000 LoadBalancer Services: plan, render, reload of a real BIRD (root).
  ['agent: one Service change, BIRD reload (root)', npmBench('@flock/agent', 'bench:services')],
  [
    'agent: allocation store commit',
    buildAgent,
    ['node', ['packages/agent/dist/bench/store/run.js']],
  ],
  ['cni: plugin start-up against the socket server', npmBench('@flock/e2e', 'bench:plugin')],
  // CNI ADD/DEL end to end vs ptp+host-local and the ip -batch floor; agent RSS (root, cluster).
  ['cni: ADD/DEL end to end, agent footprint', npmBench('@flock/e2e', 'bench:cni')],
  ['operator: 1,000 / 5,000 nodes, RSS (cluster)', npmBench('@flock/operator')],
  // Every agent's watches at 1,000 Nodes × 30 pods: API-server CPU, bytes and events per
  // agent, write-to-last-agent lag, with 10 / 50 / 100 agents (cluster; ≈ 30-40 min on 2 cores).
  ['agent: API fan-out, 10 / 50 / 100 agents (cluster)', npmBench('@flock/agent', 'bench:fanout')],
  // 100 / 1,000 LoadBalancer Services against the real API server: burst, one more, restart.
  [
    'operator: Service addresses at 100 / 1,000 Services (cluster)',
    npmBench('@flock/operator', 'bench:services'),
  ],
  // A 3-node lab: ADD -> pinned/anycast /128 on the router, deletion without DEL -> withdrawn.
  [
    'lab: announcement and withdrawal latency (root, cluster)',
    ['npx', ['nx', 'run', 'e2e:build', '--outputStyle=static']],
    ['node', ['e2e/dist/lab/bench/announcements.js']],
  ],
  // A 3-node lab: 20 node deaths -> every route of the node gone from the router (BFD).
  [
    'lab: node failure -> routes withdrawn at the router (root, cluster)',
    ['npx', ['nx', 'run', 'e2e:build', '--outputStyle=static']],
    ['node', ['e2e/dist/lab/bench/node-failure.js']],
  ],
  // The same lab installed by the chart: 60 pods through kubelet + containerd, flock vs ptp.
  [
    'lab: pod start-up vs ptp + host-local, agent container start (root, cluster)',
    ['npx', ['nx', 'run', 'e2e:build', '--outputStyle=static']],
    ['node', ['e2e/dist/lab/bench/pod-startup.js']],
  ],
  // A 3-node lab: LoadBalancer Service created -> routable and answering at the router, Cluster
  // vs Local; a Local endpoint Ready again on a node -> its next hop at the router.
  [
    'lab: LoadBalancer services, Cluster vs Local, endpoint Ready -> next hop (root, cluster)',
    ['npx', ['nx', 'run', 'e2e:build', '--outputStyle=static']],
    ['node', ['e2e/dist/lab/bench/services.js']],
  ],
].filter(([name]) => only.length === 0 || only.some((o) => name.includes(o)));

const results = [];
for (const [name, ...commands] of benches) {
  process.stdout.write(`\n=== bench: ${name} ===\n`);
  const started = Date.now();
  let ok = true;
  for (const [file, args] of commands) {
    const r = spawnSync(file, args, { cwd: root, env, stdio: 'inherit' });
    if (r.status !== 0) {
      ok = false;
      process.stdout.write(`\n${[file, ...args].join(' ')}: exit ${r.status ?? r.signal}\n`);
      break;
    }
  }
  results.push({ name, ok, seconds: (Date.now() - started) / 1000 });
}

process.stdout.write('\n=== benches ===\n');
for (const r of results)
  process.stdout.write(
    `${r.ok ? 'ok    ' : 'FAILED'}  ${r.seconds.toFixed(0).padStart(5)} s  ${r.name}\n`,
  );
process.exit(results.every((r) => r.ok) ? 0 : 1);
