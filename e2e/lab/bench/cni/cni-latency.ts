// CNI ADD and DEL end to end as a runtime sees them (plugin process start to result), and the
// agent's footprint. Side by side in one run, pairs alternated so machine noise hits every
// candidate alike: flock (launcher + bundle against the real agent process on a real API
// server), Debian's ptp + host-local dual-stack and IPv4-only, the `ip -batch` floor of
// flock's kernel work, and a bare Node start. Root; everything in namespaces it creates.
//   npm run bench:cni -w @flock/e2e   (node e2e/dist/lab/bench/cni/cni-latency.js [pods=250] [parallel=10];
//   the same script then runs footprint.js)
// Last, CPU per ADD and DEL (cpu-round.ts): each candidate alone, plugin and agent apart.
// BENCH_AGENT=host-netns runs the agent as the test harness does (outside the node namespace).
// BENCH_CANDIDATES=flock,ptp IPv4-only,… runs only those candidates.
// Figures, not assertions: nothing here passes or fails on time.
import { access, constants, mkdtemp, rm } from 'node:fs/promises';
import { cpus, loadavg, release, tmpdir, totalmem } from 'node:os';
import { join } from 'node:path';
import { run } from '@flock/exec';
import { Netns, requireKernelTier, summarize, table } from '@flock/testkit';
import { floorCandidate, flockCandidate, ptpCandidate, type Candidate } from './candidates.js';
import { AGENT_IMAGE_NODE_FLAGS, startFlockNode, type FlockNode } from './flock-node.js';
import { phaseTable } from './agent-phases.js';
import { cpuRound, cpuTable, type CpuRound } from './cpu-round.js';
import { readRss, type Rss } from './rss.js';

const PODS = Number(process.argv[2] ?? 250);
const PARALLEL = Number(process.argv[3] ?? 10);
const CNI_PATH = process.env['BENCH_CNI_PATH'] ?? '/usr/lib/cni';
const SETTLE_MS = 5_000;
const MODE = process.env['BENCH_AGENT'] === 'host-netns' ? 'host-netns' : 'in-node';
// BENCH_AGENT_CPU_PROF=DIR: the agent (in-node) writes a V8 CPU profile there when it stops.
const PROF = process.env['BENCH_AGENT_CPU_PROF'];
// BENCH_AGENT_NODE_FLAGS='--flag …': the agent's Node flags instead of the image's.
const FLAGS = process.env['BENCH_AGENT_NODE_FLAGS']?.split(/\s+/).filter(Boolean);
const TARGET_MS = 50;
const TARGET_RSS_MIB = 100;

type Times = Map<string, number[]>;
const rotate = <T>(xs: readonly T[], k: number) => xs.map((_, j) => xs[(j + k) % xs.length]!);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function timed(into: Times, c: Candidate, work: () => Promise<void>): Promise<void> {
  const t0 = performance.now();
  await work();
  const ms = performance.now() - t0;
  const list = into.get(c.name) ?? [];
  list.push(ms);
  into.set(c.name, list);
}

/** Sequential: pod by pod, every candidate once per pod, in a rotating order. */
async function sequential(cands: readonly Candidate[], op: 'add' | 'del', round: string) {
  const times: Times = new Map();
  for (let i = 0; i < PODS; i++)
    for (const c of rotate(cands, i)) await timed(times, c, () => c[op](i, round));
  return times;
}

/** PARALLEL at once of one candidate, candidates alternating batch by batch. */
async function parallel(cands: readonly Candidate[], op: 'add' | 'del', round: string) {
  const times: Times = new Map();
  for (let b = 0, k = 0; b < PODS; b += PARALLEL, k++)
    for (const c of rotate(cands, k)) {
      const batch = Array.from({ length: Math.min(PARALLEL, PODS - b) }, (_, j) => b + j);
      await Promise.all(batch.map((i) => timed(times, c, () => c[op](i, round))));
    }
  return times;
}

async function main(): Promise<void> {
  if (!Number.isInteger(PODS) || PODS < 1 || !Number.isInteger(PARALLEL) || PARALLEL < 1)
    throw new Error('usage: cni-latency.js [pods] [parallel]');
  requireKernelTier('nsenter', 'cnitool');
  await access(join(CNI_PATH, 'ptp'), constants.X_OK).catch(() => {
    throw new Error(
      `${CNI_PATH}/ptp not found: apt-get install containernetworking-plugins (or BENCH_CNI_PATH)`,
    );
  });
  const work = await mkdtemp(join(tmpdir(), 'flock-bench-cni-'));
  const namespaces: Netns[] = [];
  const ns = async (prefix: string) => {
    const n = await Netns.create(prefix);
    namespaces.push(n);
    return n;
  };
  const podPool = async (prefix: string) => {
    const pool: Netns[] = [];
    for (let i = 0; i < PODS; i++) pool.push(await ns(prefix));
    return pool;
  };
  let flock: FlockNode | undefined;
  const load = [loadavg()[0]!];
  try {
    process.stderr.write(`starting the API server, the agent and ${PODS} pods…\n`);
    // The agent as its image runs it (heap bounds, lite mode).
    flock = await startFlockNode(PODS, MODE, [
      ...(FLAGS ?? AGENT_IMAGE_NODE_FLAGS),
      ...(PROF ? ['--cpu-prof', `--cpu-prof-dir=${PROF}`] : []),
    ]);
    await sleep(SETTLE_MS);
    const idle = await readRss(flock.agentPid);

    process.stderr.write(`creating ${4 * PODS} pod namespaces…\n`);
    const ptpDualNode = await ns('bptpd');
    const ptpV4Node = await ns('bptp4');
    const floorNode = await ns('bfloor');
    const bareNode = await ns('bbare');
    const flockPods = await podPool('bpfl');
    const cands: Candidate[] = [
      flockCandidate({
        node: flock.netns,
        pods: flockPods,
        binDir: flock.node.binDir,
        socketPath: flock.node.socketPath,
        pod: flock.pod,
      }),
      await ptpCandidate({
        name: 'ptp dual-stack',
        node: ptpDualNode,
        pods: await podPool('bpd'),
        dataDir: join(work, 'host-local-dual'),
        cniPath: CNI_PATH,
        ranges: { v6: '2001:db8:201::/64', v4: '100.65.0.0/22' },
      }),
      await ptpCandidate({
        name: 'ptp IPv4-only',
        node: ptpV4Node,
        pods: await podPool('bp4'),
        dataDir: join(work, 'host-local-v4'),
        cniPath: CNI_PATH,
        ranges: { v4: '100.66.0.0/22' },
      }),
      floorCandidate({ node: floorNode, pods: await podPool('bpfloor') }),
    ];
    // The plugin is a Node program: a bare Node start in the same wrapper is its floor.
    const bareStart = async () =>
      void (await run('nsenter', [`--net=${bareNode.path}`, process.execPath, '-e', '0']));
    cands.push({ name: 'bare node start', add: bareStart, del: bareStart });
    // BENCH_CANDIDATES=name,name: only those (quick iterations; the recorded run takes all).
    const only = process.env['BENCH_CANDIDATES']?.split(',').map((n) => n.trim());
    if (only) cands.splice(0, cands.length, ...cands.filter((c) => only.includes(c.name)));

    for (const c of cands) await c.add(0, 'warm').then(() => c.del(0, 'warm'));
    process.stderr.write(
      `sequential ADD of ${PODS} pods per candidate (ptp dual-stack waits for DAD)…\n`,
    );
    const seqAdd = await sequential(cands, 'add', 's');
    load.push(loadavg()[0]!);
    await sleep(SETTLE_MS);
    const full = await readRss(flock.agentPid);
    process.stderr.write('sequential DEL…\n');
    const seqDel = await sequential(cands, 'del', 's');
    process.stderr.write(`ADD and DEL, ${PARALLEL} in parallel…\n`);
    const parAdd = await parallel(cands, 'add', 'p');
    const parDel = await parallel(cands, 'del', 'p');
    load.push(loadavg()[0]!);
    const end = await readRss(flock.agentPid);
    process.stderr.write('CPU per ADD and DEL, one candidate at a time…\n');
    const cpu: CpuRound[] = [];
    for (const c of cands)
      cpu.push(await cpuRound(c, PODS, c.name === 'flock' ? flock.agentPid : undefined));
    // flock again with the kubelet's two status writes after each ADD: the agent's reaction
    // to its own pod becoming Running and Ready (policy and announcement passes) counts too.
    const node = flock;
    if (cands.some((c) => c.name === 'flock'))
      cpu.push(
        await cpuRound(
          flockCandidate({
            name: "flock + the kubelet's status writes",
            node: node.netns,
            pods: flockPods,
            binDir: node.node.binDir,
            socketPath: node.node.socketPath,
            pod: node.pod,
            added: (i, ips) => node.kubeletStatus(i, ips),
          }),
          PODS,
          node.agentPid,
        ),
      );

    report({ seqAdd, seqDel, parAdd, parDel }, cands, { idle, full, end }, load);
    console.log(cpuTable(cpu, 'ptp IPv4-only'));
    console.log(phaseTable(flock.logs, { s: 'sequential', p: `${PARALLEL} in parallel` }));
  } finally {
    for (const n of namespaces) await n.destroy();
    await flock?.stop();
    await rm(work, { recursive: true, force: true });
  }
}

function report(
  t: Record<'seqAdd' | 'seqDel' | 'parAdd' | 'parDel', Times>,
  cands: readonly Candidate[],
  rss: Record<'idle' | 'full' | 'end', Rss>,
  load: number[],
): void {
  const rows = (m: Times) => cands.map((c) => ({ name: c.name, ms: m.get(c.name) ?? [] }));
  const refs = ['ptp dual-stack', 'ptp IPv4-only', 'ip -batch floor'];
  const mem = Math.round(totalmem() / 2 ** 30);
  console.log(`# flock CNI end-to-end latency and agent footprint — ${new Date().toISOString()}`);
  console.log(
    `${cpus().length} CPUs, ${mem} GiB, Linux ${release()}, Node ${process.version}; ${PODS} pods per candidate; agent ${MODE}; ` +
      `load average (1 min) at start / after sequential ADD / end: ${load.map((l) => l.toFixed(1)).join(' / ')}`,
  );
  console.log(table(`ADD, sequential (${PODS} pods live at the end)`, rows(t.seqAdd), refs));
  console.log(table('DEL, sequential', rows(t.seqDel), refs));
  console.log(table(`ADD, ${PARALLEL} in parallel`, rows(t.parAdd), refs));
  console.log(table(`DEL, ${PARALLEL} in parallel`, rows(t.parDel), refs));

  const s = (m: Times, name: string) => summarize(m.get(name) ?? []);
  const verdict = (ok: boolean) => (ok ? 'met' : 'NOT met');
  console.log('\n### Targets (sequential; the parallel figures are above)\n');
  for (const [label, m] of [
    ['sequential', t.seqAdd],
    [`${PARALLEL} in parallel`, t.parAdd],
  ] as const) {
    const f = s(m, 'flock');
    const dual = s(m, 'ptp dual-stack');
    const v4 = s(m, 'ptp IPv4-only');
    console.log(
      `- ADD ${label}: flock p99 ${f.p99.toFixed(1)} ms (≤ ${TARGET_MS}: ${verdict(f.p99 <= TARGET_MS)}); ` +
        `p99 / ptp dual-stack ×${(f.p99 / dual.p99).toFixed(3)} (≤ 0.05: ${verdict(f.p99 / dual.p99 <= 0.05)}); ` +
        `p99 / ptp IPv4-only ×${(f.p99 / v4.p99).toFixed(2)} (≤ 3: ${verdict(f.p99 / v4.p99 <= 3)})`,
    );
  }
  for (const [label, m] of [
    ['sequential', t.seqDel],
    [`${PARALLEL} in parallel`, t.parDel],
  ] as const) {
    const f = s(m, 'flock');
    const v4 = s(m, 'ptp IPv4-only');
    console.log(
      `- DEL ${label}: flock p99 ${f.p99.toFixed(1)} ms (≤ ${TARGET_MS}: ${verdict(f.p99 <= TARGET_MS)}); ` +
        `p99 / ptp IPv4-only ×${(f.p99 / v4.p99).toFixed(2)} (≤ 3: ${verdict(f.p99 / v4.p99 <= 3)})`,
    );
  }
  const mib = (r: Rss) => `${r.rssMiB.toFixed(0)} MiB (peak ${r.peakMiB.toFixed(0)} MiB)`;
  console.log('\n### Agent footprint (VmRSS of the agent process; peak = VmHWM so far)\n');
  console.log(`- idle, ready, 0 pods, ${SETTLE_MS / 1000} s after start-up: ${mib(rss.idle)}`);
  console.log(
    `- ${PODS} pods live (after the sequential ADDs + ${SETTLE_MS / 1000} s): ${mib(rss.full)} ` +
      `(target ≤ ${TARGET_RSS_MIB} MB at 250 pods: ${verdict(rss.full.rssMiB * 1.048576 <= TARGET_RSS_MIB)})`,
  );
  console.log(`- after every DEL and the parallel round: ${mib(rss.end)}`);
}

main().catch((e: unknown) => {
  console.error(e);
  process.exitCode = 1;
});
