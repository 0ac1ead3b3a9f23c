// Benchmark parts that need no kernel: parse, translate and render times of synthetic states.
import { performance } from 'node:perf_hooks';
import { render } from '../src/render.js';
import { parseState, type State } from '../src/state.js';
import { translate } from '../src/translate.js';
import { syntheticState } from './generate.js';

/** Median wall time of `runs` calls (after one warm-up call), in milliseconds. */
export async function median(runs: number, fn: () => unknown): Promise<number> {
  await fn();
  const times: number[] = [];
  for (let i = 0; i < runs; i++) {
    const t0 = performance.now();
    await fn();
    times.push(performance.now() - t0);
  }
  times.sort((a, b) => a - b);
  return times[Math.floor(times.length / 2)] as number;
}

export interface RenderFigures {
  policies: number;
  pods: number;
  parseMs: number;
  translateMs: number;
  renderMs: number;
  scriptKiB: number;
  elements: number;
  script: string;
  state: State;
}

export async function renderFigures(
  policies: number,
  pods: number,
  runs = 5,
): Promise<RenderFigures> {
  const raw = syntheticState({ policies, pods });
  const state = parseState(raw);
  const ir = translate(state);
  const script = render(ir);
  const elements =
    ir.addressSets.reduce((n, s) => n + s.v4.length + s.v6.length, 0) +
    ir.tupleSets.reduce((n, s) => n + s.v4.length + s.v6.length, 0);
  return {
    policies,
    pods,
    parseMs: await median(runs, () => parseState(raw)),
    translateMs: await median(runs, () => translate(state)),
    renderMs: await median(runs, () => render(ir)),
    scriptKiB: Math.round(Buffer.byteLength(script) / 1024),
    elements,
    script,
    state,
  };
}
