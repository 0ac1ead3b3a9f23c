// The real twin of incremental.test.ts: two node namespaces follow the same history of cluster
// changes, one through NftApplier.applyTable (diffs whenever the structure allows) and one by a
// full replace of the table each time; after every step `nft -j list table` must be the same in
// both (handles dropped, elements sorted: a hash set's listing order is not its content).
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Netns, requireKernelTier } from '@flock/testkit';
import { NftApplier, nftRunner } from './apply.js';
import { render, renderTable } from './render.js';
import { parseState, type State } from './state.js';
import { local, namespace, pod, policy, state } from '../testing/builders.js';
import { applyChange, arbitraryHistory } from '../testing/changes.js';
import { IncrementalTranslator, translate } from './translate.js';

type Json = Record<string, unknown>;

function stripHandles(x: unknown): unknown {
  if (Array.isArray(x)) return x.map(stripHandles);
  if (x && typeof x === 'object')
    return Object.fromEntries(
      Object.entries(x)
        .filter(([k]) => k !== 'handle')
        .map(([k, v]) => [k, stripHandles(v)]),
    );
  return x;
}

/** The table's content, independent of creation order: chains and sets by name, rules per chain. */
async function listing(ns: Netns): Promise<unknown> {
  const out = (await ns.exec('nft', ['-j', 'list', 'table', 'inet', 'flock'])).stdout;
  const items = (JSON.parse(out) as { nftables: Json[] }).nftables.map(stripHandles) as Json[];
  const byName = (kind: string) =>
    items
      .flatMap((i) => (i[kind] ? [i[kind] as Json] : []))
      .map((o) =>
        o['elem']
          ? { ...o, elem: (o['elem'] as unknown[]).map((e) => JSON.stringify(e)).sort() }
          : o,
      )
      .sort((a, b) => (String(a['name']) < String(b['name']) ? -1 : 1));
  const rules = new Map<string, unknown[]>();
  for (const i of items) {
    const r = i['rule'] as Json | undefined;
    if (r) rules.set(String(r['chain']), [...(rules.get(String(r['chain'])) ?? []), r]);
  }
  return {
    tables: byName('table'),
    chains: byName('chain'),
    sets: byName('set'),
    maps: byName('map'),
    rules: [...rules].sort(([a], [b]) => (a < b ? -1 : 1)),
  };
}

describe('incremental apply on a real table (kernel)', () => {
  let viaDiff: Netns;
  let viaReplace: Netns;
  beforeAll(async () => {
    requireKernelTier('nft');
    viaDiff = await Netns.create('npdiffa');
    viaReplace = await Netns.create('npdiffb');
  });
  afterAll(async () => {
    await viaDiff?.destroy();
    await viaReplace?.destroy();
  });

  /** Follow `states` both ways; returns how applyTable applied each. */
  async function follow(states: Iterable<State>) {
    const failed: string[] = [];
    const real = nftRunner({ netns: viaDiff.name });
    const applier = new NftApplier(async (script) => {
      try {
        await real(script);
      } catch (error) {
        failed.push(`${(error as Error).message}\n${script}`);
        throw error;
      }
    });
    const replace = nftRunner({ netns: viaReplace.name });
    const incremental = new IncrementalTranslator();
    const modes: string[] = [];
    for (const s of states) {
      modes.push(await applier.applyTable(renderTable(incremental.translate(s))));
      await replace(render(translate(s)));
      expect(await listing(viaDiff)).toEqual(await listing(viaReplace));
    }
    expect(failed).toEqual([]); // a diff nft refused would have been hidden by the fallback
    return modes;
  }

  it('pods and chains coming, going and changing: diffs give the replaced table', async () => {
    const ns = [namespace('x', { team: 'a' })];
    const base = {
      namespaces: ns,
      policies: [
        policy('x/web', {
          podSelector: { matchLabels: { app: 'web' } },
          ingress: [{ from: [{ podSelector: { matchLabels: { role: 'client' } } }] }],
          egress: [{ to: [{ ipBlock: { cidr: '10.9.0.0/16', except: ['10.9.1.0/24'] } }] }],
        }),
      ],
    };
    const client = (i: number, ip: string) => pod(`x/c${i}`, { role: 'client' }, [ip]);
    const web = (labels: Record<string, string>) => pod('x/w', labels, ['10.0.0.1', 'fd00::1']);
    const at = (pods: unknown[], locals: unknown[], more: unknown[] = []) =>
      parseState(state({ ...base, policies: [...base.policies, ...more], pods, local: locals }));
    const two = [
      web({ app: 'web' }),
      client(1, '10.0.0.10'),
      client(3, '10.0.0.12'),
      pod('x/v', { app: 'web' }, ['10.0.0.2']),
    ];
    const both = [local('x/w', 'flockw'), local('x/v', 'flockv')];
    // Another policy for the same pods adds a rule but no set: both chains change in place.
    const allowAll = policy('x/all', {
      podSelector: { matchLabels: { app: 'web' } },
      ingress: [{}],
    });
    const modes = await follow([
      at([web({ app: 'web' }), client(1, '10.0.0.10')], [local('x/w', 'flockw')]),
      // adjacent addresses: the interval set's elements merge into a range and split again
      at(
        [web({ app: 'web' }), client(1, '10.0.0.10'), client(2, '10.0.0.11')],
        [local('x/w', 'flockw')],
      ),
      at(
        [
          web({ app: 'web' }),
          client(1, '10.0.0.10'),
          client(2, '10.0.0.11'),
          client(3, '10.0.0.12'),
        ],
        [local('x/w', 'flockw')],
      ),
      at(
        [web({ app: 'web' }), client(1, '10.0.0.10'), client(3, '10.0.0.12')],
        [local('x/w', 'flockw')],
      ),
      // a second local pod (new chains), then the first one leaves isolation (chains go)
      at(two, both),
      at(two, both, [allowAll]),
      at(two, both),
      at(
        [
          web({ app: 'other' }),
          client(1, '10.0.0.10'),
          client(3, '10.0.0.12'),
          pod('x/v', { app: 'web' }, ['10.0.0.2']),
        ],
        [local('x/w', 'flockw'), local('x/v', 'flockv')],
      ),
      at([web({ app: 'other' }), client(1, '10.0.0.10')], [local('x/w', 'flockw')]),
    ]);
    expect(modes[0]).toBe('replace');
    expect(modes.slice(1).filter((m) => m === 'diff').length).toBeGreaterThanOrEqual(6);
    expect(modes.slice(5, 7)).toEqual(['diff', 'diff']); // chains re-made in place, both ways
  });

  it('an additions-only diff refuses to run when the table is gone: the applier replaces', async () => {
    const ns = [namespace('x')];
    const at = (pods: unknown[]) =>
      parseState(state({ namespaces: ns, pods, policies: [], local: [local('x/a', 'flocka')] }));
    const a = pod('x/a', {}, ['10.0.0.1']);
    const applier = new NftApplier(nftRunner({ netns: viaDiff.name }));
    expect(await applier.applyTable(renderTable(translate(at([a]))))).toBe('replace');
    await viaDiff.exec('nft', ['delete', 'table', 'inet', 'flock']);
    const b = pod('x/b', {}, ['10.0.0.2']);
    // A local pod more would be an additions-only diff; with no table it must not half-create one.
    const more = parseState(
      state({
        namespaces: ns,
        pods: [a, b],
        policies: [],
        local: [local('x/a', 'flocka'), local('x/b', 'flockb')],
      }),
    );
    expect(await applier.applyTable(renderTable(translate(more)))).toBe('replace');
    await nftRunner({ netns: viaReplace.name })(render(translate(more)));
    expect(await listing(viaDiff)).toEqual(await listing(viaReplace));
  });

  it('random histories of pod, namespace and policy changes', async () => {
    const tally: Record<string, number> = {};
    await fc.assert(
      fc.asyncProperty(arbitraryHistory(8), async ({ start, changes }) => {
        const states: State[] = [parseState(start)];
        changes.forEach((c, i) => states.push(applyChange(states.at(-1) as State, c, i)));
        const valid = states.filter((s) => {
          try {
            translate(s);
            return true;
          } catch {
            return false;
          }
        });
        for (const m of await follow(valid)) tally[m] = (tally[m] ?? 0) + 1;
      }),
      { numRuns: 40 },
    );
    // Random small states change structure often (a set comes or goes): most steps replace,
    // but the diffs must be exercised too (the hand-written history above always is).
    const steps = Object.values(tally).reduce((a, b) => a + b, 0);
    expect(tally['diff'] ?? 0).toBeGreaterThanOrEqual(Math.ceil(steps / 20));
  });
});
