// The incremental path against the full one, on random histories of cluster changes: the
// IncrementalTranslator must give exactly translate()'s IR for every state, and the diffs
// NftApplier.applyTable sends must leave the (fake) kernel with exactly the table a full
// replace gives. The real kernel does the same comparison in diff.kernel.test.ts.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { NftApplier } from './apply.js';
import { FakeNftKernel } from '../testing/fake-kernel.js';
import { render, renderTable } from './render.js';
import { parseState, type State } from './state.js';
import { applyChange, arbitraryHistory } from '../testing/changes.js';
import { IncrementalTranslator, translate } from './translate.js';

function attempt<T>(fn: () => T): { ok: true; value: T } | { ok: false; error: string } {
  try {
    return { ok: true, value: fn() };
  } catch (error) {
    return { ok: false, error: (error as Error).message };
  }
}

describe('incremental translation and apply', () => {
  it('equal translate() and a full replace after every change of random histories', async () => {
    const totals = { diff: 0, replace: 0, unchanged: 0, failedDiffs: 0, steps: 0 };
    await fc.assert(
      fc.asyncProperty(arbitraryHistory(), async ({ start, changes }) => {
        const kernel = new FakeNftKernel();
        const applier = new NftApplier(async (script) => {
          try {
            await kernel.run(script);
          } catch (error) {
            totals.failedDiffs++; // the applier would fall back to a replace: a diff bug
            throw error;
          }
        });
        const incremental = new IncrementalTranslator();
        const step = async (state: State) => {
          totals.steps++;
          const full = attempt(() => translate(state));
          const inc = attempt(() => incremental.translate(state));
          expect(inc).toEqual(full);
          if (!full.ok || !inc.ok) return;
          const mode = await applier.applyTable(renderTable(inc.value));
          totals[mode]++;
          const reference = new FakeNftKernel();
          reference.execute(render(full.value));
          expect(kernel.normalised()).toEqual(reference.normalised());
        };
        let state = parseState(start);
        await step(state);
        for (const [i, change] of changes.entries()) {
          state = applyChange(state, change, i);
          await step(state);
        }
      }),
      { numRuns: 400 },
    );
    expect(totals.failedDiffs).toBe(0);
    // The property must have exercised the incremental path, not only replaces.
    expect(totals.diff).toBeGreaterThan(totals.steps / 10);
    expect(totals.replace).toBeGreaterThan(0);
  }, 120_000);
});
