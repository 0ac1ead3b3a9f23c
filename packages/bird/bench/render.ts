// Render time against the number of pinned addresses, side by side in one run:
//   npm run bench -w @flock/bird
// Linear rendering shows as a "per address" column that stays flat and a ratio near the size ratio.
import { performance } from 'node:perf_hooks';
import { formatIp, type BirdModel } from '../src/model.js';
import { renderBirdConfig } from '../src/render.js';

function modelWith(pinned: number): BirdModel {
  return {
    routerId: '192.0.2.10',
    asn: 65001,
    peers: [
      { address: '2001:db8:ffff::1', asn: 65000, password: 'bench' },
      { address: '203.0.113.1', asn: 65000 },
    ],
    aggregates: ['2001:db8:1::/64', '198.51.100.0/26'],
    pinned: Array.from({ length: pinned }, (_, i) =>
      formatIp((0x20010db8_0099n << 80n) + BigInt(i), 6),
    ),
    anycast: ['2001:db8:aa::1'],
  };
}

/** Median of `runs` timings in ms, after a warm-up. */
function time(model: BirdModel, runs: number): number {
  for (let i = 0; i < 3; i++) renderBirdConfig(model);
  const samples: number[] = [];
  for (let i = 0; i < runs; i++) {
    const start = performance.now();
    renderBirdConfig(model);
    samples.push(performance.now() - start);
  }
  samples.sort((a, b) => a - b);
  return samples[Math.floor(samples.length / 2)] ?? 0;
}

const sizes = [100, 1_000, 10_000];
const results = sizes.map((n) => ({ n, ms: time(modelWith(n), n >= 10_000 ? 15 : 50) }));
const baseline = results[0]!;
console.log('renderBirdConfig (validation included), median of repeated runs');
console.log(
  'pinned'.padStart(8),
  'ms'.padStart(10),
  'µs/address'.padStart(12),
  `ratio vs ${baseline.n}`.padStart(14),
);
for (const { n, ms } of results) {
  console.log(
    String(n).padStart(8),
    ms.toFixed(2).padStart(10),
    ((ms * 1000) / n).toFixed(2).padStart(12),
    `${(ms / baseline.ms).toFixed(1)}x`.padStart(14),
  );
}
console.log(
  `size ratio ${sizes.at(-1)! / baseline.n}x; bytes for ${sizes.at(-1)}: ${renderBirdConfig(modelWith(sizes.at(-1)!)).length}`,
);
