// `node dist/bench/cluster-run.js` (as root for the nft part): ClusterNetworkPolicy figures for
// docs/benchmarks/netpol.md — translate + render + `nft -f` of 100 NetworkPolicies and C
// ClusterNetworkPolicies over 10,000 pods (C = 0 is the baseline), then one-pod changes on the
// C = 100 cluster through the incremental path (IncrementalTranslator + NftApplier.applyTable),
// alternated with a full translate + replace, the same changes without cluster policies and with
// the tier cache off (cluster-change.ts). Not a test.
import { performance } from 'node:perf_hooks';
import { Netns } from '@flock/testkit';
import { nftRunner } from '../src/apply.js';
import { render } from '../src/render.js';
import { parseState } from '../src/state.js';
import { translate } from '../src/translate.js';
import {
  CLUSTER_CHANGES,
  CLUSTER_CHANGE_LABEL,
  clusterChangeFigures,
  type ClusterChange,
} from './cluster-change.js';
import { syntheticClusterPolicies, syntheticState } from './generate.js';
import { median } from './render-bench.js';

const f1 = (n: number) => n.toFixed(1);
const PODS = 10_000;

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

async function changeTable(namespaces: Record<ClusterChange, Netns> | undefined): Promise<void> {
  const c = await clusterChangeFigures(namespaces, PODS);
  console.log(
    `\none-pod change, 100 NetworkPolicies + 100 ClusterNetworkPolicies × ${PODS} pods (-np: no cluster policies), ${c.rounds} rounds alternated${namespaces ? '' : ' (not root: no nft)'}`,
  );
  console.log(
    '| change | wall ms | translate ms | render ms | apply ms (diff + nft) | CPU ms node | CPU ms nft | wall / same change -np | applied |',
  );
  console.log('| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |');
  for (const m of CLUSTER_CHANGES) {
    const s = c.spans[m];
    const np = m.startsWith('local') ? c.spans['local-np'] : c.spans['remote-np'];
    console.log(
      `| ${CLUSTER_CHANGE_LABEL[m]} | ${f1(s.wall)} | ${f1(s.translate)} | ${f1(s.render)} | ${f1(s.apply)} | ${f1(s.cpuNode)} | ${f1(s.cpuNft)} | ${(s.wall / np.wall).toFixed(2)} | ${c.applied[m]} |`,
    );
  }
}

async function main(): Promise<void> {
  const root = process.getuid?.() === 0;
  console.log(
    `# ClusterNetworkPolicy benchmark — ${new Date().toISOString()}, node ${process.version}`,
  );
  const ns = root && !process.argv.includes('changes') ? await Netns.create('npcbench') : undefined;
  let changeNs: Record<ClusterChange, Netns> | undefined;
  if (root) {
    changeNs = {} as Record<ClusterChange, Netns>;
    for (const [i, m] of CLUSTER_CHANGES.entries()) changeNs[m] = await Netns.create(`npcc${i}`);
  }
  try {
    // `cluster-run.js changes`: only the one-pod changes.
    if (!process.argv.includes('changes')) await tableFigures(ns);
    await changeTable(changeNs);
  } finally {
    await ns?.destroy();
    for (const n of Object.values(changeNs ?? {})) await n.destroy();
  }
}

await main();
