// Benchmark of the CNI plugin's end-to-end latency as a runtime sees it: process start to
// exit, ADD against the real socket server with an instant handler, next to a bare Node start
// (the floor: the plugin is a Node program). Runs are interleaved so that machine noise hits
// every row alike. Figures, not assertions:
//   npm run bench:plugin -w @flock/e2e   (or: node e2e/dist/lab/bench/cni/plugin-latency.js [runs])
import { mkdtemp, rm } from 'node:fs/promises';
import { cpus, tmpdir } from 'node:os';
import { join } from 'node:path';
import { run } from '@flock/exec';
import type { AgentResponse } from '@flock/api';
import { startCniServer } from '@flock/agent';
import { installPlugin } from '@flock/agent/testing';

const runs = Number(process.argv[2] ?? 300);
if (!Number.isInteger(runs) || runs < 1) throw new Error('usage: plugin-latency.js [runs]');
const TARGET_P99_MS = 50;

const work = await mkdtemp(join(tmpdir(), 'flock-bench-'));
const plugin = await installPlugin(join(work, 'bin'), { probes: true });
const socketPath = join(work, 'run', 'cni.sock');
const instant: AgentResponse = {
  ok: true,
  result: {
    cniVersion: '1.1.0',
    interfaces: [{ name: 'eth0', sandbox: '/run/netns/bench' }],
    ips: [{ address: '2001:db8::5/128', gateway: 'fe80::1', interface: 0 }],
    routes: [{ dst: '::/0', gw: 'fe80::1' }],
  },
};
const server = await startCniServer({ socketPath, handle: async () => instant });

const conf = JSON.stringify({ cniVersion: '1.1.0', name: 'flock', type: 'flock', socketPath });
const addEnv = {
  CNI_COMMAND: 'ADD',
  CNI_CONTAINERID: 'c0ffee42',
  CNI_NETNS: '/run/netns/bench',
  CNI_IFNAME: 'eth0',
  CNI_ARGS: 'K8S_POD_NAMESPACE=default;K8S_POD_NAME=web-0',
  CNI_PATH: plugin.dir,
  FLOCK_NODE: process.execPath,
};

interface Row {
  name: string;
  once: () => Promise<unknown>;
  times: number[];
}
const row = (name: string, once: () => Promise<unknown>): Row => ({ name, once, times: [] });
const node = (args: string[], options: Parameters<typeof run>[2] = {}) =>
  run(process.execPath, args, options);
const rows: Row[] = [
  row('bare Node start (node -e 0)', () => node(['-e', '0'])),
  row('plugin VERSION (no agent)', () =>
    run(plugin.launcher, [], { env: { ...addEnv, CNI_COMMAND: 'VERSION' }, input: conf }),
  ),
  row('plugin ADD via launcher, real server', () =>
    run(plugin.launcher, [], { env: addEnv, input: conf }),
  ),
  row('plugin ADD, node flock.mjs (no launcher)', () =>
    node([plugin.bundle], { env: addEnv, input: conf }),
  ),
  row('plugin ADD via launcher, NODE_COMPILE_CACHE', () =>
    run(plugin.launcher, [], {
      env: { ...addEnv, NODE_COMPILE_CACHE: join(work, 'compile-cache') },
      input: conf,
    }),
  ),
  // The plugin's request schemas alone, bundled the same way: what validation costs at start.
  row('probe: request schemas with zod/mini', () => node([join(plugin.dir, 'probe-zod-mini.mjs')])),
  row('probe: request schemas with full zod', () => node([join(plugin.dir, 'probe-zod-full.mjs')])),
];

for (const r of rows) await r.once(); // warm the page cache, fill the compile cache
for (let i = 0; i < runs; i++)
  for (const r of rows) {
    const start = performance.now();
    await r.once();
    r.times.push(performance.now() - start);
  }
await server.close();
await rm(work, { recursive: true, force: true });

const pct = (sorted: number[], p: number) =>
  sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? NaN;
const stats = rows.map((r) => {
  const sorted = [...r.times].sort((a, b) => a - b);
  return { name: r.name, p50: pct(sorted, 50), p99: pct(sorted, 99) };
});
const base = stats[0] as (typeof stats)[number];
console.log(
  `\nflock CNI plugin latency: ${runs} interleaved runs per row, ${cpus().length} CPUs, Node ${process.version}`,
);
console.log(
  `  ${'row'.padEnd(48)} ${'p50 ms'.padStart(8)} ${'p99 ms'.padStart(8)}   ×bare p50  ×bare p99`,
);
for (const s of stats)
  console.log(
    `  ${s.name.padEnd(48)} ${s.p50.toFixed(1).padStart(8)} ${s.p99.toFixed(1).padStart(8)}   ${`×${(s.p50 / base.p50).toFixed(2)}`.padStart(9)}  ${`×${(s.p99 / base.p99).toFixed(2)}`.padStart(9)}`,
  );
const add = stats[2] as (typeof stats)[number];
console.log(
  `\n  ADD end to end p99 ${add.p99.toFixed(1)} ms (target ≤ ${TARGET_P99_MS} ms): ${add.p99 <= TARGET_P99_MS ? 'met' : 'NOT met'}; over a bare start: +${(add.p50 - base.p50).toFixed(1)} ms at p50`,
);
