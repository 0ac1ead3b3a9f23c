// The agent's footprint: resident memory of the real agent process (inside its node namespace,
// as production runs it) when idle and with N pods added through the real plugin, for Node's
// default heap sizing and for explicit heap flags. Root, a real API server.
//   npm run bench:cni -w @flock/e2e   (or: node e2e/dist/lab/bench/cni/footprint.js [pods=250])
// Figures, not assertions.
import { cpus, release, totalmem } from 'node:os';
import { Netns, requireKernelTier, summarize } from '@flock/testkit';
import { flockCandidate } from './candidates.js';
import { AGENT_IMAGE_NODE_FLAGS, startFlockNode, type FlockNode } from './flock-node.js';
import { readRss, type Rss } from './rss.js';

const PODS = Number(process.argv[2] ?? 250);
const SETTLE_MS = 5_000;
const TARGET_MB = 100;
// Without a memory limit V8 sizes its heap from the machine's memory (24 GiB here); in a Pod
// it sizes it from the container's limit. The image's flags: NODE_OPTIONS plus --lite-mode in
// its ENTRYPOINT (NODE_OPTIONS does not take that one).
// More rows to compare: BENCH_FOOTPRINT_FLAGS='--flag-a --flag-b;--flag-c' (rows split by ';').
const SETTINGS: [string, string[]][] = [
  ['default heap', []],
  [
    'heap flags only: --max-old-space-size=128 --max-semi-space-size=1',
    ['--max-old-space-size=128', '--max-semi-space-size=1'],
  ],
  [`the image: ${AGENT_IMAGE_NODE_FLAGS.join(' ')}`, AGENT_IMAGE_NODE_FLAGS],
  ...(process.env['BENCH_FOOTPRINT_FLAGS'] ?? '')
    .split(';')
    .map((row) => row.trim())
    .filter(Boolean)
    .map((row): [string, string[]] => [row, row.split(/\s+/)]),
];

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

interface Row {
  setting: string;
  idle: Rss;
  full: Rss;
  after: Rss;
  addP50: number;
}

async function measure(setting: string, flags: string[]): Promise<Row> {
  const pods: Netns[] = [];
  let flock: FlockNode | undefined;
  try {
    flock = await startFlockNode(PODS, 'in-node', flags);
    for (let i = 0; i < PODS; i++) pods.push(await Netns.create('bfp'));
    const plugin = flockCandidate({
      node: flock.netns,
      pods,
      binDir: flock.node.binDir,
      socketPath: flock.node.socketPath,
      pod: flock.pod,
    });
    await sleep(SETTLE_MS);
    const idle = await readRss(flock.agentPid);
    const times: number[] = [];
    for (let i = 0; i < PODS; i++) {
      const t0 = performance.now();
      await plugin.add(i, 'f');
      times.push(performance.now() - t0);
    }
    await sleep(SETTLE_MS);
    const full = await readRss(flock.agentPid);
    for (let i = 0; i < PODS; i++) await plugin.del(i, 'f');
    await sleep(SETTLE_MS);
    const after = await readRss(flock.agentPid);
    return { setting, idle, full, after, addP50: summarize(times).p50 };
  } finally {
    for (const p of pods) await p.destroy();
    await flock?.stop();
  }
}

async function main(): Promise<void> {
  if (!Number.isInteger(PODS) || PODS < 1) throw new Error('usage: footprint.js [pods]');
  requireKernelTier('nsenter', 'cnitool');
  const rows: Row[] = [];
  for (const [setting, flags] of SETTINGS) {
    process.stderr.write(`footprint: ${setting}, ${PODS} pods…\n`);
    rows.push(await measure(setting, flags));
  }
  const mib = (r: Rss) => `${r.rssMiB.toFixed(0)} (${r.peakMiB.toFixed(0)})`;
  const tree = (r: Rss) => `${r.treeRssMiB.toFixed(0)} / ${r.treeChargeMiB.toFixed(0)}`;
  const met = (mibValue: number) => (mibValue * 1.048576 <= TARGET_MB ? 'met' : 'NOT met');
  console.log(`\n# flock agent footprint — ${new Date().toISOString()}`);
  console.log(
    `${cpus().length} CPUs, ${Math.round(totalmem() / 2 ** 30)} GiB, Linux ${release()}, Node ${process.version}; ` +
      `MiB, ${SETTLE_MS / 1000} s after each step. agent = the agent process, VmRSS (peak VmHWM); ` +
      `with spawn server = the agent and its child processes: VmRSS summed / the agent's VmRSS plus the children's private pages (≈ a container's charge)\n`,
  );
  console.log(
    `| agent heap | agent idle | agent, ${PODS} pods | agent after ${PODS} DELs | with spawn server, ${PODS} pods | ADD p50 ms | agent ≤ ${TARGET_MB} MB | with spawn server (charge) ≤ ${TARGET_MB} MB |`,
  );
  console.log('| --- | ---: | ---: | ---: | ---: | ---: | --- | --- |');
  for (const r of rows)
    console.log(
      `| ${r.setting} | ${mib(r.idle)} | ${mib(r.full)} | ${mib(r.after)} | ${tree(r.full)} (${r.full.processes} processes) | ${r.addP50.toFixed(1)} | ${met(r.full.rssMiB)} | ${met(r.full.treeChargeMiB)} |`,
    );
}

main().catch((e: unknown) => {
  console.error(e);
  process.exitCode = 1;
});
