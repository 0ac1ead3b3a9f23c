// One-pod changes for cluster-run.ts, alternated in one run, each way in its own network namespace
// with its own NftApplier (so each knows the table in force):
//   full          — 100 cluster policies: translate from scratch + replace of the whole table;
//   remote, local — 100 cluster policies, the agent's path (IncrementalTranslator → renderTable →
//                   NftApplier.applyTable): a pod of another node appears / a pod of this node;
//   *-np          — the same changes on the same cluster without cluster policies (the reference);
//   *-uncached    — 100 cluster policies with the tier cache off (every tier walked again).
// Each change is timed in spans (translate, render, apply = diff + nft), and in CPU (this process
// and its nft children), which other load on a shared machine disturbs less than wall time.
import { performance } from 'node:perf_hooks';
import type { Netns } from '@flock/testkit';
import { NftApplier, nftRunner, type NftRun } from '../src/apply.js';
import { renderTable } from '../src/render.js';
import { LocalPod, parseState, type State } from '../src/state.js';
import { IncrementalTranslator, translate } from '../src/translate.js';
import { cpuMs, newPod } from './change-bench.js';
import { syntheticClusterPolicies, syntheticState } from './generate.js';

export const CLUSTER_CHANGES = [
  'full',
  'remote',
  'local',
  'remote-np',
  'local-np',
  'remote-uncached',
  'local-uncached',
] as const;
export type ClusterChange = (typeof CLUSTER_CHANGES)[number];

export const CLUSTER_CHANGE_LABEL: Record<ClusterChange, string> = {
  full: 'full translate + replace of the whole table (a pod of another node)',
  remote: 'incremental: a pod of another node appears (in peers of 5 sets, 15,000 elements)',
  local: 'incremental: a pod of this node appears (its chains and map element)',
  'remote-np': 'the same pod of another node, no cluster policies',
  'local-np': 'the same pod of this node, no cluster policies',
  'remote-uncached': 'a pod of another node, tier cache off',
  'local-uncached': 'a pod of this node, tier cache off',
};

export interface Spans {
  wall: number;
  translate: number;
  render: number;
  apply: number;
  cpuNode: number;
  cpuNft: number;
}

export interface ClusterChangeFigures {
  /** Medians per way (CPU: means). */
  spans: Record<ClusterChange, Spans>;
  applied: Record<ClusterChange, string>;
  rounds: number;
}

/** The port cluster policies' named-port rules name. */
const METRICS = { name: 'metrics', containerPort: 9090 };

const stateWith = (clusterPolicies: number, pods: number): State =>
  parseState({
    ...syntheticState({ policies: 100, pods }),
    ...syntheticClusterPolicies(clusterPolicies),
  });

export async function clusterChangeFigures(
  namespaces: Record<ClusterChange, Netns> | undefined,
  pods: number,
  rounds = 9,
): Promise<ClusterChangeFigures> {
  const withPolicies = stateWith(100, pods);
  const without = stateWith(0, pods);
  const runner = (m: ClusterChange): NftRun =>
    namespaces ? nftRunner({ netns: namespaces[m].name }) : async () => undefined;
  const ways = Object.fromEntries(
    CLUSTER_CHANGES.map((m) => [
      m,
      {
        state: m.endsWith('-np') ? without : withPolicies,
        tr: new IncrementalTranslator({ tierCache: !m.endsWith('-uncached') }),
        applier: new NftApplier(runner(m)),
      },
    ]),
  ) as Record<ClusterChange, { state: State; tr: IncrementalTranslator; applier: NftApplier }>;
  for (const w of Object.values(ways))
    await w.applier.applyTable(renderTable(w.tr.translate(w.state)));
  // A pod of another node in ns-0 (team t0, env dev): the peers of namespaces and pods rules
  // take it. A pod of this node in ns-1, which many cluster policies select.
  const next = (m: ClusterChange, n: number): State => {
    const { state } = ways[m];
    if (!m.startsWith('local'))
      return {
        ...state,
        pods: [...state.pods, newPod(n, 'ns-0', { app: 'app-0', tier: 'web' }, METRICS)],
      };
    const pod = newPod(n, 'ns-1', { app: 'app-1', tier: 'api' }, METRICS);
    const entry = LocalPod.parse({
      namespace: 'ns-1',
      name: pod.metadata.name,
      interface: `flockc${n.toString(16).padStart(3, '0')}`,
    });
    return { ...state, pods: [...state.pods, pod], local: [...state.local, entry] };
  };
  const samples = Object.fromEntries(CLUSTER_CHANGES.map((m) => [m, [] as Spans[]])) as Record<
    ClusterChange,
    Spans[]
  >;
  for (let r = 0; r < rounds + 1; r++) {
    for (const m of CLUSTER_CHANGES) {
      const w = ways[m];
      w.state = next(m, r);
      const c0 = cpuMs();
      const t0 = performance.now();
      if (m === 'full') w.applier.forget();
      const ir = m === 'full' ? translate(w.state) : w.tr.translate(w.state);
      const t1 = performance.now();
      const table = renderTable(ir);
      const t2 = performance.now();
      await w.applier.applyTable(table);
      const t3 = performance.now();
      const c1 = cpuMs();
      if (r === 0) continue; // warm-up round
      samples[m].push({
        wall: t3 - t0,
        translate: t1 - t0,
        render: t2 - t1,
        apply: t3 - t2,
        cpuNode: c1.node - c0.node,
        cpuNft: c1.nft - c0.nft,
      });
    }
  }
  const med = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] as number;
  const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / xs.length;
  const summary = (s: Spans[]): Spans => ({
    wall: med(s.map((x) => x.wall)),
    translate: med(s.map((x) => x.translate)),
    render: med(s.map((x) => x.render)),
    apply: med(s.map((x) => x.apply)),
    cpuNode: mean(s.map((x) => x.cpuNode)),
    cpuNft: mean(s.map((x) => x.cpuNft)),
  });
  return {
    spans: Object.fromEntries(CLUSTER_CHANGES.map((m) => [m, summary(samples[m])])) as Record<
      ClusterChange,
      Spans
    >,
    applied: Object.fromEntries(
      CLUSTER_CHANGES.map((m) => {
        const c = ways[m].applier.counts;
        return [m, `diff ${c.diff}, replace ${c.replace}, unchanged ${c.unchanged}`];
      }),
    ) as Record<ClusterChange, string>,
    rounds,
  };
}
