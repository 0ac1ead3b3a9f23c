// Benchmark of the agent's allocation store: commit latency (a whole-file atomic replace with
// fsync of the file and its directory) with 10, 100 and 1,000 entries in the file. Figures,
// not assertions; ratios to 10 entries, in one run.
//   ./dev npx tsc -b packages/agent/tsconfig.testing.json && ./dev node packages/agent/dist/bench/store/run.js
import { mkdtemp, rm } from 'node:fs/promises';
import { cpus, tmpdir, totalmem } from 'node:os';
import { join } from 'node:path';
import { formatAddress } from '@flock/ipam';
import { table } from '@flock/testkit';
import { AllocationStore } from '../../src/store/index.js';

const SAMPLES = 200;

const entry = (i: number) => ({
  containerID: `c${i.toString(16).padStart(64, '0')}`,
  ifname: 'eth0',
  namespace: 'bench',
  pod: `pod-${i}`,
  podUID: '6f1c2a4e-0c1d-4b7e-9a55-3c2d1e0f9a8b',
  ip6: formatAddress(6, (0x2001_0db8n << 96n) + BigInt(i + 1)),
  ip4: formatAddress(4, 0x0a00_0000n + BigInt(i + 1)),
  pinned: false,
  anycast: [],
});

/** Commit latencies (ms) of SAMPLES new entries, with `existing` committed entries in the file. */
async function commits(dir: string, existing: number): Promise<number[]> {
  const store = new AllocationStore(join(dir, `store-${existing}`, 'allocations.json'));
  await store.load();
  for (let i = 0; i < existing; i++) {
    await store.putPending(entry(i));
    await store.commit(entry(i).containerID, 'eth0');
  }
  const samples: number[] = [];
  for (let i = existing; i < existing + SAMPLES; i++) {
    await store.putPending(entry(i));
    const start = performance.now();
    await store.commit(entry(i).containerID, 'eth0');
    samples.push(performance.now() - start);
    await store.remove(entry(i).containerID, 'eth0');
  }
  return samples;
}

console.log(
  `allocation store benchmark — node ${process.version}, ${cpus().length} cores, ${Math.round(totalmem() / 2 ** 30)} GiB`,
);
const dir = await mkdtemp(join(process.env['BENCH_DIR'] ?? tmpdir(), 'flock-store-bench-'));
try {
  const rows = [];
  for (const existing of [10, 100, 1000])
    rows.push({
      name: `commit, ${existing} entries in the file`,
      ms: await commits(dir, existing),
    });
  console.log(
    table(`allocation store commit, fsync of file and directory included (${dir})`, rows, [
      rows[0]!.name,
    ]),
  );
} finally {
  await rm(dir, { recursive: true, force: true });
}
