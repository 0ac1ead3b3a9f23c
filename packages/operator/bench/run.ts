// Benchmark of flock-operator against the real API server on this machine: how long until N
// Nodes have correct NodeConfigs, and how much memory the operator process holds.
//   cold     N Nodes exist, no operator runs; start `node dist/src/main.js` → all N correct
//   restart  N NodeConfigs exist; a new process → its first completed reconcile (no writes)
//   live     an operator runs; N new Nodes are created as fast as the API server takes
//            them (32 in flight) → all N correct (node creation time shown alongside)
// Each size runs twice on a fresh control plane: with Node's default heap settings, and with
// NODE_OPTIONS="--max-semi-space-size=4 --max-old-space-size=256" (V8 otherwise sizes its heap
// for the host's 24 GiB, not for what the operator keeps alive).
// Figures, not assertions: `npm run bench -w @flock/operator` (BENCH_SIZES=1000,5000).
import { performance } from 'node:perf_hooks';
import { NodeConfig } from '@flock/api';
import { parsePrefix, prefixContains } from '@flock/ipam';
import { Cache, NODECONFIGS, resourceListWatch, silentLogger } from '@flock/kube';
import { eventually } from '@flock/testkit';
import { Limiter } from '../src/limiter.js';
import { spawnOperator, type OperatorProcess } from '../testing/child.js';
import {
  applyPool,
  createNode,
  NAMESPACE,
  startCluster,
  type Cluster,
} from '../testing/cluster.js';
import { baseSpec } from '../testing/fixtures.js';

const SIZES = (process.env['BENCH_SIZES'] ?? '1000,5000').split(',').map(Number);
const TUNED = '--max-semi-space-size=4 --max-old-space-size=256';
const MB = 1024 * 1024;

interface Row {
  nodes: number;
  heap: string;
  create: number;
  cold: number;
  restart: number;
  live: number;
  liveCreate: number;
  rssCold: number;
  peakCold: number;
  rssLive: number;
}

const seconds = (ms: number) => `${(ms / 1000).toFixed(1)} s`;

/** Watches NodeConfigs; `correct(pool, n)` when the pool's n nodes each have a valid, unique one. */
function verifier(c: Cluster) {
  const cache = new Cache({
    source: resourceListWatch(c.api, NODECONFIGS),
    schema: NodeConfig,
    logger: silentLogger,
  });
  cache.start();
  return {
    cache,
    correct(pool: string, cidr: string, n: number): boolean {
      const range = parsePrefix(cidr);
      if (!range.ok) throw new Error(range.error);
      const mine = cache.list().filter((nc) => nc.spec.pool === pool);
      if (mine.length !== n) return false;
      const seen = new Set<string>();
      for (const nc of mine) {
        const p = parsePrefix(nc.spec.cidr6);
        if (!p.ok || !prefixContains(range.value, p.value) || seen.has(nc.spec.cidr6)) return false;
        seen.add(nc.spec.cidr6);
        const rack0 = nc.metadata.name.endsWith('-r0');
        if (nc.spec.bgp.peers.length !== (rack0 ? 2 : 1) || !nc.spec.cidr4) return false;
      }
      return true;
    },
  };
}

async function createNodes(c: Cluster, prefix: string, label: string, n: number): Promise<number> {
  const limiter = new Limiter(32);
  const start = performance.now();
  const names = Array.from({ length: n }, (_, i) => `${prefix}-${i}-r${i % 10}`);
  const errors = await limiter.each(names, (name) =>
    createNode(c.api, name, { test: label, rack: name.slice(name.lastIndexOf('-') + 1) }),
  );
  if (errors.length) throw new Error(`creating nodes: ${String(errors[0])}`);
  return performance.now() - start;
}

async function waitFor(what: string, probe: () => boolean | Promise<boolean>): Promise<number> {
  const start = performance.now();
  await eventually(what, async () => (await probe()) || undefined, {
    timeoutMs: 600_000,
    intervalMs: 50,
  });
  return performance.now() - start;
}

async function reconciled(p: OperatorProcess): Promise<boolean> {
  const m = await p.get('/metrics');
  return /flock_operator_reconcile_total\{controller="pools",result="(success|requeue)"\} [1-9]/.test(
    m?.text ?? '',
  );
}

async function nodeConfigApplies(p: OperatorProcess): Promise<number> {
  const m = await p.get('/metrics');
  const line = m?.text
    .split('\n')
    .find((l) => l.startsWith('flock_operator_writes_total{kind="nodeconfig_apply",result="ok"}'));
  return line ? Number(line.split(' ').pop()) : 0;
}

async function measure(n: number, nodeOptions: string): Promise<Row> {
  const c = await startCluster();
  const v = verifier(c);
  const procs: OperatorProcess[] = [];
  const spawn = async (name: string) => {
    const flags = ['--namespace', NAMESPACE, '--log-level', 'warn'];
    const p = await spawnOperator(name, c.cp.kubeconfigPath, flags, nodeOptions);
    procs.push(p);
    return p;
  };
  try {
    const pool = (name: string, cidr6: string, cidr4: string, label: string) =>
      applyPool(c, name, {
        ...baseSpec(),
        nodeSelector: { matchLabels: { test: label } },
        bgp: {
          asn: 64512,
          peers: [
            { address: '2001:db8:ffff::1', asn: 65000 },
            {
              address: '2001:db8:ffff::2',
              asn: 65000,
              nodeSelector: { matchLabels: { rack: 'r0' } },
            },
          ],
        },
        ipv6: { cidr: cidr6, nodePrefixLength: 64 },
        ipv4: { cidr: cidr4, nodePrefixLength: 28 },
      });
    await pool('cold', '2001:db8:100::/48', '10.64.0.0/14', 'cold');
    await pool('live', '2001:db8:200::/48', '10.128.0.0/14', 'live');
    await v.cache.waitForSync(30_000);

    const create = await createNodes(c, 'cold', 'cold', n);
    const started = performance.now();
    const first = await spawn('bench-cold');
    await waitFor('cold NodeConfigs', () => v.correct('cold', '2001:db8:100::/48', n));
    const cold = performance.now() - started;
    await new Promise((r) => setTimeout(r, 2_000)); // events and status trail the NodeConfigs
    const coldMem = first.memory();
    await first.stop();

    const restartStart = performance.now();
    const second = await spawn('bench-restart');
    await waitFor('restart reconciled', () => reconciled(second));
    const restart = performance.now() - restartStart;
    const writes = await nodeConfigApplies(second);
    if (writes !== 0) throw new Error(`a restarted operator rewrote ${writes} NodeConfigs`);

    const liveStart = performance.now();
    const liveCreate = await createNodes(c, 'live', 'live', n);
    await waitFor('live NodeConfigs', () => v.correct('live', '2001:db8:200::/48', n));
    const live = performance.now() - liveStart;
    const rssLive = second.memory().rss;
    return {
      nodes: n,
      heap: nodeOptions ? 'tuned' : 'default',
      create,
      cold,
      restart,
      live,
      liveCreate,
      rssCold: coldMem.rss,
      peakCold: coldMem.peak,
      rssLive,
    };
  } finally {
    await Promise.all(procs.map((p) => p.stop()));
    await v.cache.stop();
    await c.cp.stop();
  }
}

const rows: Row[] = [];
for (const n of SIZES) {
  for (const nodeOptions of ['', TUNED]) {
    process.stdout.write(`measuring ${n} nodes, ${nodeOptions || 'default heap'}...\n`);
    rows.push(await measure(n, nodeOptions));
  }
}
const base = rows[0] as Row;
const ratio = (v: number, b: number) => `×${(v / b).toFixed(2)}`;
const mib = (b: number) => `${(b / MB).toFixed(0)} MiB`;
console.log(
  '\nflock-operator against a real kube-apiserver + etcd on this machine (ratios to the first row)',
);
console.log(
  '  nodes | heap    | create nodes | cold: all correct | restart: reconciled | live: all correct (creating took) | RSS cold (peak)   | RSS live (2×N)',
);
for (const r of rows) {
  console.log(
    [
      `  ${String(r.nodes).padStart(5)}`,
      r.heap.padEnd(7),
      seconds(r.create).padStart(12),
      `${seconds(r.cold)} ${ratio(r.cold, base.cold)}`.padStart(17),
      `${seconds(r.restart)} ${ratio(r.restart, base.restart)}`.padStart(19),
      `${seconds(r.live)} (${seconds(r.liveCreate)}) ${ratio(r.live, base.live)}`.padStart(34),
      `${mib(r.rssCold)} (${mib(r.peakCold)})`.padStart(17),
      `${mib(r.rssLive)} ${ratio(r.rssLive, base.rssLive)}`,
    ].join(' | '),
  );
}
