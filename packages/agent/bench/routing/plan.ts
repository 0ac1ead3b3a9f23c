// What one announcement pass costs the agent's CPU on a big node: it runs on every ADD/DEL,
// readiness change and every 2 s tick. Side by side for 100 / 1,000 / 10,000 pods: the plan
// alone, the plan + the BIRD model's comparison key (what a quiet tick does), and the full
// render that only a changed model pays (@flock/bird's renderer, with validation).
//   ./dev npx nx run agent:build-testing && ./dev node packages/agent/dist/bench/routing/plan.js
// Not a test: nothing here passes or fails on time.
import { performance } from 'node:perf_hooks';
import { cpus } from 'node:os';
import { renderBirdConfig } from '@flock/bird';
import { planAnnouncements, toBirdModel } from '../../src/routing/announcements.js';
import { claimsFor } from '../../testing/routing-fixtures.js';
import { BENCH_SPEC as spec, benchNode as node } from './fixtures.js';

function msPer(fn: () => unknown, minMs = 1500): number {
  fn();
  let runs = 0;
  const t0 = performance.now();
  do {
    fn();
    runs++;
  } while (performance.now() - t0 < minMs);
  return (performance.now() - t0) / runs;
}

const rows: string[][] = [];
for (const n of [100, 1_000, 10_000]) {
  const { entries, podOf } = node(n);
  const claimOf = claimsFor(entries, { pinnedCIDRs: spec.pinnedCIDRs ?? [] });
  const plan = () => planAnnouncements({ spec, entries, podOf, claimOf });
  const model = () => toBirdModel({ plan: plan(), spec, routerId: '10.0.0.1', peers: [] });
  const planMs = msPer(plan);
  const quietMs = msPer(() => JSON.stringify(model()));
  const renderMs = msPer(() => renderBirdConfig(model()));
  rows.push([
    n.toLocaleString('en'),
    planMs.toFixed(3),
    quietMs.toFixed(3),
    renderMs.toFixed(3),
    `${(quietMs / planMs).toFixed(2)}x`,
    `${(renderMs / planMs).toFixed(2)}x`,
  ]);
}
console.log(`announcement pass, ms per pass (node ${process.version}, ${cpus()[0]?.model ?? '?'})`);
console.log(
  ['pods', 'plan', 'plan+key (quiet tick)', 'plan+render', 'key/plan', 'render/plan'].join('\t'),
);
for (const r of rows) console.log(r.join('\t'));
