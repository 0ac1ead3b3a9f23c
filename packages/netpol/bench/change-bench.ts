// One-pod changes on the 1,000-policy × 10,000-pod cluster, three ways alternated in one run,
// each in its own network namespace (so each applier knows the table in force):
//   full    — what every change cost before incremental apply: parseState of the whole state,
//             translate, render, and `nft -f` replacing the whole table;
//   remote  — a pod of another node appears: IncrementalTranslator + renderTable +
//             NftApplier.applyTable, which sends only the changed set elements;
//   local   — a pod of this node appears, isolated by policies: the same, the diff also adds its
//             chain and verdict-map element;
//   gone    — a pod of another node is deleted: the sets that lose its addresses are flushed
//             and declared again whole.
// Wall time is what a caller waits; CPU time (this process + nft children) is what the machine
// spends, and is less disturbed by other load on a shared machine.
import { readFileSync } from 'node:fs';
import { performance } from 'node:perf_hooks';
import type { Netns } from '@flock/testkit';
import { NftApplier, nftRunner, type NftRun } from '../src/apply.js';
import { render, renderTable } from '../src/render.js';
import { Pod } from '@flock/api';
import { LocalPod, parseState, type State, type StateInput } from '../src/state.js';
import { IncrementalTranslator, translate } from '../src/translate.js';
import { syntheticState } from './generate.js';

export const CHANGE_MODES = ['full', 'remote', 'local', 'gone'] as const;
export type ChangeMode = (typeof CHANGE_MODES)[number];

export interface ChangeFigures {
  /** Median wall ms per change. */
  wallMs: Record<ChangeMode, number>;
  /** Mean CPU ms per change: this process (translate, render, diff) and its nft children. */
  cpuMs: Record<ChangeMode, { node: number; nft: number }>;
  /** How applyTable applied the incremental changes (diff / replace / unchanged). */
  applied: Record<string, number>;
  rounds: number;
}

/** CPU ms used so far by this process and by its reaped children (nft). */
export function cpuMs(): { node: number; nft: number } {
  const own = process.cpuUsage();
  // /proc/self/stat fields 16 and 17: children's user and system time, in clock ticks (100 Hz).
  const fields = readFileSync('/proc/self/stat', 'utf8').split(') ')[1]?.split(' ') ?? [];
  return {
    node: (own.user + own.system) / 1000,
    nft: (Number(fields[13]) + Number(fields[14])) * 10,
  };
}

/** A new pod `new-N` with one named container port. */
export function newPod(
  n: number,
  namespace: string,
  labels: Record<string, string>,
  port = { name: 'http', containerPort: 8080 },
): Pod {
  return Pod.parse({
    metadata: { name: `new-${n}`, namespace, labels },
    spec: { containers: [{ name: 'main', ports: [port] }] },
    // Apart from every other pod's address: a new address next to an existing one merges two
    // interval elements into one, so its set is flushed and declared again whole instead.
    status: {
      phase: 'Running',
      podIPs: [{ ip: `10.200.${n}.1` }, { ip: `fd00:200:${n.toString(16)}::1` }],
    },
  });
}

export async function changeFigures(
  namespaces: Record<ChangeMode, Netns> | undefined,
  rounds = 9,
): Promise<ChangeFigures> {
  const raw = syntheticState({ policies: 1000, pods: 10000 });
  const base = parseState(raw);
  const runner = (mode: ChangeMode): NftRun =>
    namespaces ? nftRunner({ netns: namespaces[mode].name }) : async () => undefined;
  // Each way starts from the same table in force.
  let rawFull: StateInput = raw;
  const full = runner('full');
  await full(render(translate(base)));
  const incremental = Object.fromEntries(
    (['remote', 'local', 'gone'] as const).map((m) => [
      m,
      { state: base, tr: new IncrementalTranslator(), applier: new NftApplier(runner(m)) },
    ]),
  ) as Record<
    'remote' | 'local' | 'gone',
    { state: State; tr: IncrementalTranslator; applier: NftApplier }
  >;
  for (const { tr, applier, state } of Object.values(incremental)) {
    await applier.applyTable(renderTable(tr.translate(state)));
  }
  const localNames = new Set(base.local.map((l) => `${l.namespace}/${l.name}`));
  const change: Record<ChangeMode, (n: number) => Promise<void>> = {
    gone: async (n) => {
      const i = incremental.gone;
      // A `tier: web` pod (every third), which the synthetic policies' peers select.
      const victim = i.state.pods.find(
        (p) =>
          Number(p.metadata.name.slice(4)) >= 5004 + 21 * n &&
          Number(p.metadata.name.slice(4)) % 3 === 0 &&
          !localNames.has(`${p.metadata.namespace}/${p.metadata.name}`),
      );
      i.state = { ...i.state, pods: i.state.pods.filter((p) => p !== victim) };
      await i.applier.applyTable(renderTable(i.tr.translate(i.state)));
    },
    full: async (n) => {
      rawFull = {
        ...rawFull,
        pods: [...(rawFull.pods ?? []), newPod(n, 'ns-1', { app: 'app-1', tier: 'web' })],
      };
      await full(render(translate(parseState(rawFull))));
    },
    remote: async (n) => {
      const i = incremental.remote;
      i.state = {
        ...i.state,
        pods: [...i.state.pods, newPod(n, 'ns-1', { app: 'app-1', tier: 'web' })],
      };
      await i.applier.applyTable(renderTable(i.tr.translate(i.state)));
    },
    local: async (n) => {
      const i = incremental.local;
      const pod = newPod(n, 'ns-0', { app: 'app-0', tier: 'api' });
      const entry = LocalPod.parse({
        namespace: 'ns-0',
        name: pod.metadata.name,
        interface: `flockn${n.toString(16).padStart(3, '0')}`,
      });
      i.state = { ...i.state, pods: [...i.state.pods, pod], local: [...i.state.local, entry] };
      await i.applier.applyTable(renderTable(i.tr.translate(i.state)));
    },
  };
  const wall: Record<ChangeMode, number[]> = { full: [], remote: [], local: [], gone: [] };
  const cpu: Record<ChangeMode, { node: number; nft: number }> = {
    full: { node: 0, nft: 0 },
    remote: { node: 0, nft: 0 },
    local: { node: 0, nft: 0 },
    gone: { node: 0, nft: 0 },
  };
  for (let r = 0; r < rounds + 1; r++) {
    for (const mode of CHANGE_MODES) {
      const c0 = cpuMs();
      const t0 = performance.now();
      await change[mode](r);
      if (r === 0) continue; // warm-up round
      wall[mode].push(performance.now() - t0);
      const c1 = cpuMs();
      cpu[mode].node += c1.node - c0.node;
      cpu[mode].nft += c1.nft - c0.nft;
    }
  }
  const med = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] as number;
  const applied: Record<string, number> = {};
  for (const m of ['remote', 'local', 'gone'] as const) {
    for (const [k, v] of Object.entries(incremental[m].applier.counts)) applied[`${m} ${k}`] = v;
  }
  return {
    wallMs: Object.fromEntries(
      CHANGE_MODES.map((m) => [m, med(wall[m])]),
    ) as ChangeFigures['wallMs'],
    cpuMs: Object.fromEntries(
      CHANGE_MODES.map((m) => [m, { node: cpu[m].node / rounds, nft: cpu[m].nft / rounds }]),
    ) as ChangeFigures['cpuMs'],
    applied,
    rounds,
  };
}
