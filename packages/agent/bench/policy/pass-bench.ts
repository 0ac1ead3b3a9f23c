// What one NetworkPolicy pass of the agent costs without the kernel, against re-validating the
// whole state on every change (netpol's parseState), side by side in one run:
//   ./dev npx nx run agent:build-testing && ./dev node packages/agent/dist/bench/policy/pass-bench.js
// Also the pass for a one-pod change as the reconciler runs it now (incremental translate and a
// table diff), without nft. Not a test: nothing passes or fails on time. nft's own cost is in
// docs/benchmarks/netpol.md.
import { performance } from 'node:perf_hooks';
import { cpus } from 'node:os';
import type { Pod } from '@flock/api';
import {
  IncrementalTranslator,
  diffTables,
  parseState,
  render,
  renderTable,
  translate,
} from '@flock/netpol';
import { CachedPod } from '../../src/node/pods.js';
import { PolicyNamespace } from '../../src/policy/caches.js';
import { buildPolicyState, type LocalAttachment } from '../../src/policy/state.js';
import { PolicyChecker } from '../../src/policy/validate.js';
import { entry, namespace, networkPolicy, pod } from '../../testing/policy.js';

const NAMESPACES = 50;
const LOCAL = 100;

function median(runs: number, fn: () => unknown): number {
  fn();
  const times: number[] = [];
  for (let i = 0; i < runs; i++) {
    const t0 = performance.now();
    fn();
    times.push(performance.now() - t0);
  }
  times.sort((a, b) => a - b);
  return times[Math.floor(times.length / 2)] as number;
}

/** Medians of `a` and `b` run in turns. */
function alternated(runs: number, a: () => unknown, b: () => unknown): [number, number] {
  const ta: number[] = [];
  const tb: number[] = [];
  a();
  b();
  for (let i = 0; i < runs; i++) {
    for (const [fn, out] of [
      [a, ta],
      [b, tb],
    ] as const) {
      const t0 = performance.now();
      fn();
      out.push(performance.now() - t0);
    }
  }
  const mid = (t: number[]) => [...t].sort((x, y) => x - y)[Math.floor(t.length / 2)] as number;
  return [mid(ta), mid(tb)];
}

function cluster(pods: number, policies: number) {
  const ns = (i: number) => `ns-${i % NAMESPACES}`;
  const rawNamespaces = Array.from({ length: NAMESPACES }, (_, i) =>
    namespace(ns(i), { team: `t${i % 5}` }),
  );
  const rawPods = Array.from({ length: pods }, (_, i) =>
    pod(
      `pod-${i}`,
      { app: `app-${i % 7}` },
      [`fd00::${i.toString(16)}`, `10.1.${i >> 8}.${i & 255}`],
      {
        namespace: ns(i),
        ports: [{ name: 'http', port: 8080 }],
      },
    ),
  );
  const rawPolicies = Array.from({ length: policies }, (_, i) => {
    const kind = i % 3;
    const spec =
      kind === 0
        ? { podSelector: {}, policyTypes: ['Ingress'] }
        : kind === 1
          ? {
              podSelector: { matchLabels: { app: `app-${i % 7}` } },
              ingress: [
                {
                  from: [{ podSelector: { matchLabels: { app: `app-${(i + 1) % 7}` } } }],
                  ports: [{ port: 'http' }],
                },
              ],
            }
          : {
              podSelector: { matchLabels: { app: `app-${i % 7}` } },
              ingress: [{ from: [{ namespaceSelector: { matchLabels: { team: `t${i % 5}` } } }] }],
            };
    return networkPolicy(`${ns(i)}/p-${i}`, spec);
  });
  const step = Math.floor(pods / LOCAL);
  const locals = Array.from({ length: LOCAL }, (_, k) => k * step + 1);
  return { rawNamespaces, rawPods, rawPolicies, locals };
}

function figures(pods: number, policies: number) {
  const c = cluster(pods, policies);
  // What the caches hold: each object validated and trimmed once, when it arrived.
  let cachedPods: Pod[] = [];
  const admitMs = median(3, () => (cachedPods = c.rawPods.map((p) => CachedPod.parse(p))));
  const cachedNamespaces = c.rawNamespaces.map((n) => PolicyNamespace.parse(n));
  const checker = new PolicyChecker();
  const locals: LocalAttachment[] = c.locals.map((i) => ({
    entry: entry(`pod-${i}`, `fd00::${i.toString(16)}`, {
      namespace: `ns-${i % NAMESPACES}`,
      podUID: `uid-pod-${i}`,
    }),
    pod: cachedPods[i],
  }));
  const agentPass = () =>
    render(
      translate(
        buildPolicyState({
          namespaces: cachedNamespaces,
          pods: cachedPods,
          policies: c.rawPolicies.flatMap((p) => checker.check(p) ?? []),
          locals,
        }).state,
      ),
    );
  const built = buildPolicyState({
    namespaces: cachedNamespaces,
    pods: cachedPods,
    policies: c.rawPolicies.flatMap((p) => checker.check(p) ?? []),
    locals,
  });
  const raw = JSON.parse(JSON.stringify(built.state)) as unknown;
  const reparsePass = () => render(translate(parseState(raw)));
  if (agentPass() !== reparsePass()) throw new Error('the two ways disagree');
  // Alternated, so that load from elsewhere on the machine hits both alike.
  const [passMs, reparseMs] = alternated(9, agentPass, reparsePass);
  const parseMs = median(7, () => parseState(raw));
  const buildMs = median(7, () =>
    buildPolicyState({
      namespaces: cachedNamespaces,
      pods: cachedPods,
      policies: c.rawPolicies.flatMap((p) => checker.check(p) ?? []),
      locals,
    }),
  );
  // One pod appears elsewhere in the cluster: the pass as the reconciler runs it now —
  // build, incremental translate, render to a table, diff against the table in force.
  const incremental = new IncrementalTranslator();
  const build = (all: Pod[]) =>
    buildPolicyState({
      namespaces: cachedNamespaces,
      pods: all,
      policies: c.rawPolicies.flatMap((p) => checker.check(p) ?? []),
      locals,
    }).state;
  let table = renderTable(incremental.translate(build(cachedPods)));
  let n = 0;
  const changeMs = median(9, () => {
    n++;
    const extra = CachedPod.parse(
      pod(`new-${n}`, { app: 'app-1' }, [`fd00:200::${n.toString(16)}`, `10.200.0.${n}`], {
        namespace: 'ns-1',
      }),
    );
    cachedPods = [...cachedPods, extra];
    const next = renderTable(incremental.translate(build(cachedPods)));
    if (diffTables(table, next) === undefined) throw new Error('expected an element diff');
    table = next;
  });
  return {
    pods,
    policies,
    admitUs: (admitMs * 1000) / pods,
    buildMs,
    parseMs,
    passMs,
    reparseMs,
    changeMs,
  };
}

figures(1_000, 100); // warm-up: the JIT, not the figures
const rows = [figures(1_000, 100), figures(10_000, 100), figures(10_000, 1_000)];
process.stdout.write(
  `NetworkPolicy pass (no kernel), ${cpus().length} cores, Node ${process.version}; medians of 7-9, pass columns alternated\n\n`,
);
process.stdout.write(
  '| policies |   pods | cache admit µs/pod | build ms | parseState ms | agent pass ms | re-parse pass ms | re-parse / agent | one-pod change ms |\n',
);
process.stdout.write(
  '| -------: | -----: | -----------------: | -------: | ------------: | ------------: | ---------------: | ---------------: | ----------------: |\n',
);
for (const r of rows) {
  process.stdout.write(
    `| ${String(r.policies).padStart(8)} | ${r.pods.toLocaleString('en').padStart(6)} | ${r.admitUs.toFixed(1).padStart(18)} | ${r.buildMs.toFixed(1).padStart(8)} | ${r.parseMs.toFixed(1).padStart(13)} | ${r.passMs.toFixed(1).padStart(13)} | ${r.reparseMs.toFixed(1).padStart(16)} | ${(r.reparseMs / r.passMs).toFixed(2).padStart(16)} | ${r.changeMs.toFixed(1).padStart(17)} |\n`,
  );
}
