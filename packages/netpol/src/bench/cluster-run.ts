// `node dist/bench/cluster-run.js` (as root for the nft part): ClusterNetworkPolicy figures for
// docs/benchmarks/netpol.md — translate + render + `nft -f` of 100 NetworkPolicies and C
// ClusterNetworkPolicies over 10,000 pods (C = 0 is the baseline), then one-pod changes on the
// C = 100 cluster through the incremental path (IncrementalTranslator + NftApplier.applyTable),
// alternated with a full translate + replace of the same change. Not a test.
import { performance } from 'node:perf_hooks';
import { Netns } from '@flock/testkit';
import { NftApplier, nftRunner, type NftRun } from '../apply.js';
import { render, renderTable } from '../render.js';
import { Pod } from '@flock/api';
import { LocalPod, parseState, type State } from '../state.js';
import { IncrementalTranslator, translate } from '../translate.js';
import { syntheticClusterPolicies, syntheticState } from './generate.js';
import { median } from './render-bench.js';

const f1 = (n: number) => n.toFixed(1);
const PODS = 10_000;

function stateWith(clusterPolicies: number): State {
  return parseState({
    ...syntheticState({ policies: 100, pods: PODS }),
    ...syntheticClusterPolicies(clusterPolicies),
  });
}

function newPod(n: number, namespace: string, labels: Record<string, string>): Pod {
  return Pod.parse({
    metadata: { name: `new-${n}`, namespace, labels },
    spec: { containers: [{ name: 'main', ports: [{ name: 'metrics', containerPort: 9090 }] }] },
    status: {
      phase: 'Running',
      podIPs: [{ ip: `10.200.${n}.1` }, { ip: `fd00:200:${n.toString(16)}::1` }],
    },
  });
}

async function tableFigures(ns: Netns | undefined): Promise<void> {
  console.log(
    '\n| cluster policies | pods | parse ms | translate ms | render ms | script KiB | rules | nft -f first ms | nft -f replace ms | translate + render + replace ms |',
  );
  console.log('| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |');
  for (const count of [0, 100]) {
    const raw = {
      ...syntheticState({ policies: 100, pods: PODS }),
      ...syntheticClusterPolicies(count),
    };
    const state = parseState(raw);
    const ir = translate(state);
    const script = render(ir);
    const parseMs = await median(5, () => parseState(raw));
    const translateMs = await median(5, () => translate(state));
    const renderMs = await median(5, () => render(ir));
    const rules = (script.match(/ (accept|return|drop|goto \S+) comment /g) ?? []).length;
    let first = NaN;
    let replace = NaN;
    if (ns) {
      await ns.exec('nft', ['flush', 'ruleset']);
      const apply = nftRunner({ netns: ns.name });
      const t0 = performance.now();
      await apply(script);
      first = performance.now() - t0;
      replace = await median(3, () => apply(script));
    }
    console.log(
      `| ${count} | ${PODS} | ${f1(parseMs)} | ${f1(translateMs)} | ${f1(renderMs)} | ${Math.round(Buffer.byteLength(script) / 1024)} | ${rules} | ${f1(first)} | ${f1(replace)} | ${f1(translateMs + renderMs + replace)} |`,
    );
  }
}

type Mode = 'full' | 'remote' | 'local';

async function changeFigures(namespaces: Record<Mode, Netns> | undefined, rounds = 9) {
  const base = stateWith(100);
  const runner = (m: Mode): NftRun =>
    namespaces ? nftRunner({ netns: namespaces[m].name }) : async () => undefined;
  const ways = Object.fromEntries(
    (['full', 'remote', 'local'] as const).map((m) => [
      m,
      { state: base, tr: new IncrementalTranslator(), applier: new NftApplier(runner(m)) },
    ]),
  ) as Record<Mode, { state: State; tr: IncrementalTranslator; applier: NftApplier }>;
  for (const w of Object.values(ways))
    await w.applier.applyTable(renderTable(w.tr.translate(w.state)));
  const change: Record<Mode, (n: number) => Promise<void>> = {
    // The same change as `remote`, the way it cost without incremental translation and diffs.
    full: async (n) => {
      const w = ways.full;
      w.state = {
        ...w.state,
        pods: [...w.state.pods, newPod(n, 'ns-0', { app: 'app-0', tier: 'web' })],
      };
      w.applier.forget();
      await w.applier.applyTable(renderTable(translate(w.state)));
    },
    // A pod of another node in ns-0 (team t0): peers of namespaces and pods rules take it.
    remote: async (n) => {
      const w = ways.remote;
      w.state = {
        ...w.state,
        pods: [...w.state.pods, newPod(n, 'ns-0', { app: 'app-0', tier: 'web' })],
      };
      await w.applier.applyTable(renderTable(w.tr.translate(w.state)));
    },
    // A pod of this node that several cluster policies select: its chains and map elements.
    local: async (n) => {
      const w = ways.local;
      const pod = newPod(n, 'ns-1', { app: 'app-1', tier: 'api' });
      const entry = LocalPod.parse({
        namespace: 'ns-1',
        name: pod.metadata.name,
        interface: `flockc${n.toString(16).padStart(3, '0')}`,
      });
      w.state = { ...w.state, pods: [...w.state.pods, pod], local: [...w.state.local, entry] };
      await w.applier.applyTable(renderTable(w.tr.translate(w.state)));
    },
  };
  const wall: Record<Mode, number[]> = { full: [], remote: [], local: [] };
  for (let r = 0; r < rounds + 1; r++) {
    for (const m of ['full', 'remote', 'local'] as const) {
      const t0 = performance.now();
      await change[m](r);
      if (r > 0) wall[m].push(performance.now() - t0);
    }
  }
  const med = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] as number;
  console.log(
    `\none-pod change, 100 NetworkPolicies + 100 ClusterNetworkPolicies × ${PODS} pods, ${rounds} rounds alternated${namespaces ? '' : ' (not root: no nft)'}`,
  );
  console.log('| change | wall ms (median) | applied |');
  console.log('| --- | ---: | --- |');
  const label: Record<Mode, string> = {
    full: 'full translate + replace of the whole table (a pod of another node)',
    remote: 'incremental: a pod of another node appears',
    local: 'incremental: a pod of this node appears (its chains)',
  };
  for (const m of ['full', 'remote', 'local'] as const) {
    const c = ways[m].applier.counts;
    console.log(`| ${label[m]} | ${f1(med(wall[m]))} | diff ${c.diff}, replace ${c.replace} |`);
  }
}

async function main(): Promise<void> {
  const root = process.getuid?.() === 0;
  console.log(
    `# ClusterNetworkPolicy benchmark — ${new Date().toISOString()}, node ${process.version}`,
  );
  const ns = root ? await Netns.create('npcbench') : undefined;
  const changeNs = root
    ? {
        full: await Netns.create('npccf'),
        remote: await Netns.create('npccr'),
        local: await Netns.create('npccl'),
      }
    : undefined;
  try {
    await tableFigures(ns);
    await changeFigures(changeNs);
  } finally {
    await ns?.destroy();
    for (const n of Object.values(changeNs ?? {})) await n.destroy();
  }
}

await main();
