// What a remote pod's change costs a node with a ClusterNetworkPolicy Deny by selector: such a
// rule drops peers not known yet (unknown-peers.ts) with a set of every live pod's address.
// --change label: a label change that keeps the pod selected; --change delete: the pod deleted,
// then created again (both timed, apart). Translation only (IncrementalTranslator), CPU per
// change, no nft (no root needed). With --base DIR (another build's packages/netpol/dist, e.g.
// main's) both builds run the same changes alternated in one process, and the ratio is printed.
//   node dist/bench/live-pods.js [--pods N] [--changes N] [--change label|delete] [--base DIR]
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';
import type { State, StateInput } from '../src/state.js';
import type { IncrementalTranslator } from '../src/translate.js';
import { syntheticState } from './generate.js';

interface Build {
  name: string;
  parseState: (input: unknown) => State;
  Translator: new () => IncrementalTranslator;
}

async function load(name: string, dist: string): Promise<Build> {
  const mod = async <T>(file: string) =>
    (await import(pathToFileURL(join(dist, 'src', file)).href)) as T;
  const { parseState } = await mod<{ parseState: Build['parseState'] }>('state.js');
  const { IncrementalTranslator } = await mod<{ IncrementalTranslator: Build['Translator'] }>(
    'translate.js',
  );
  return { name, parseState, Translator: IncrementalTranslator };
}

const { values } = parseArgs({
  strict: true,
  options: {
    pods: { type: 'string', default: '50000' },
    changes: { type: 'string', default: '40' },
    change: { type: 'string', default: 'label' },
    base: { type: 'string' },
  },
});
if (values.change !== 'label' && values.change !== 'delete')
  throw new Error(`--change: label or delete, not ${values.change}`);
const deletes = values.change === 'delete';
const pods = Number(values.pods);
const changes = Number(values.changes);
const builds = [await load('this build', join(import.meta.dirname, '..'))];
if (values.base) builds.push(await load('base', values.base));

const base = syntheticState({ pods, policies: 100 });
const input: StateInput = {
  ...base,
  clusterPolicies: [
    {
      apiVersion: 'policy.networking.k8s.io/v1alpha2',
      kind: 'ClusterNetworkPolicy',
      metadata: { name: 'deny-t1' },
      spec: {
        tier: 'Admin',
        priority: 1,
        subject: { namespaces: {} },
        ingress: [{ action: 'Deny', from: [{ namespaces: { matchLabels: { team: 't1' } } }] }],
      },
    },
  ],
  podRanges: ['10.0.0.0/8', 'fd00::/64'],
};
const changed = base.pods?.[1];
if (!changed) throw new Error('--pods must be at least 2');
/** Pod 1 with a new label (it stays selected by what selected it), parsed alone. */
const relabelled = (b: Build, n: number) =>
  b.parseState({
    ...input,
    pods: [
      {
        ...changed,
        metadata: { ...changed.metadata, labels: { ...changed.metadata.labels, rev: `${n}` } },
      },
    ],
  }).pods[0];

const cpu = () => {
  const u = process.cpuUsage();
  return (u.user + u.system) / 1000;
};
const runs = builds.map((b) => {
  const translator = new b.Translator();
  const state = b.parseState(input);
  translator.translate(state); // the first, full translation
  return { build: b, translator, state, ms: [] as number[], added: [] as number[] };
});
for (let n = 1; n <= changes; n++)
  for (const r of n % 2 ? runs : [...runs].reverse()) {
    // As the agent hands it over: every other pod the same object, the changed one new.
    let state: State;
    if (deletes) state = { ...r.state, pods: r.state.pods.filter((_, i) => i !== 1) };
    else {
      const pod = relabelled(r.build, n);
      state = { ...r.state, pods: r.state.pods.map((p, i) => (i === 1 && pod ? pod : p)) };
    }
    const t0 = cpu();
    r.translator.translate(state);
    r.ms.push(cpu() - t0);
    if (!deletes) continue;
    const t1 = cpu();
    r.translator.translate(r.state); // created again
    r.added.push(cpu() - t1);
  }
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? 0;
const what = deletes ? 'deletions (each then created again)' : 'label changes';
console.log(`${pods} pods, 100 policies + 1 Deny by selector, ${changes} ${what} of a remote pod`);
for (const r of runs) {
  const again = deletes ? `; created again, median ${median(r.added).toFixed(2)}` : '';
  console.log(`  ${r.build.name}: CPU ms per change, median ${median(r.ms).toFixed(2)}${again}`);
}
if (runs.length === 2)
  console.log(
    `  ratio this build / base: ×${(median(runs[0]!.ms) / median(runs[1]!.ms)).toFixed(3)}`,
  );
