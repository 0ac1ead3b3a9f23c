// What building a pass's state costs at cluster size: buildPolicyState alone (the walk over every
// peer pod the caches hold, 100 of them this node's), CPU per call. With --base DIR (another
// build's packages/agent/dist, e.g. main's) both builds run alternated in one process and the
// ratio is printed.
//   ./dev npx nx run agent:build-testing &&
//   ./dev node packages/agent/dist/bench/policy/build-state.js [--pods N] [--runs N] [--base DIR]
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';
import { CachedPod } from '../../src/node/pods.js';
import { PolicyNamespace } from '../../src/policy/caches.js';
import type { buildPolicyState as Build, LocalAttachment } from '../../src/policy/state.js';
import { entry, namespace, pod } from '../../testing/policy.js';

const { values } = parseArgs({
  strict: true,
  options: {
    pods: { type: 'string', default: '150000' },
    runs: { type: 'string', default: '15' },
    base: { type: 'string' },
  },
});
const count = Number(values.pods);
const runs = Number(values.runs);
const NAMESPACES = 50;

const load = async (dist: string) =>
  (
    (await import(pathToFileURL(join(dist, 'src/policy/state.js')).href)) as {
      buildPolicyState: typeof Build;
    }
  ).buildPolicyState;
const builds = [{ name: 'this build', build: await load(join(import.meta.dirname, '../..')) }];
if (values.base) builds.push({ name: 'base', build: await load(values.base) });

const hex = (n: number) => n.toString(16);
const pods = Array.from({ length: count }, (_, i) =>
  CachedPod.parse(
    pod(`pod-${i}`, { app: `a${i % 10}` }, [`fd00::${hex(i >>> 16)}:${hex(i & 0xffff)}`], {
      namespace: `ns-${i % NAMESPACES}`,
      uid: `uid-pod-${i}`,
    }),
  ),
);
const namespaces = Array.from({ length: NAMESPACES }, (_, i) =>
  PolicyNamespace.parse(namespace(`ns-${i}`)),
);
const locals: LocalAttachment[] = Array.from({ length: 100 }, (_, k) => {
  const i = k * Math.floor(count / 100) + 1;
  const e = entry(`pod-${i}`, `fd00::${hex(i >>> 16)}:${hex(i & 0xffff)}`, {
    namespace: `ns-${i % NAMESPACES}`,
    podUID: `uid-pod-${i}`,
  });
  return { entry: e, pod: pods[i] };
});

const cpuMs = (fn: () => unknown) => {
  const t0 = process.cpuUsage();
  fn();
  const t = process.cpuUsage(t0);
  return (t.user + t.system) / 1000;
};
const ms = builds.map(() => [] as number[]);
for (let r = 0; r < runs; r++)
  for (const k of r % 2 ? [...builds.keys()].reverse() : builds.keys())
    ms[k]!.push(cpuMs(() => builds[k]!.build({ namespaces, pods, policies: [], locals })));
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? 0;
console.log(`buildPolicyState, ${count} pods (100 local), ${runs} runs`);
builds.forEach((b, k) => console.log(`  ${b.name}: CPU ms, median ${median(ms[k]!).toFixed(2)}`));
if (builds.length === 2)
  console.log(`  ratio this build / base: ×${(median(ms[0]!) / median(ms[1]!)).toFixed(3)}`);
