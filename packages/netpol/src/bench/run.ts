// `npm run bench -w @flock/netpol` (as root for the nft and packet parts): prints the figures
// recorded in docs/benchmarks/netpol.md. Not a test: nothing here passes or fails on time.
import { performance } from 'node:perf_hooks';
import { Netns } from '@flock/testkit';
import { nftRunner } from '../apply.js';
import { render } from '../render.js';
import { parseState } from '../state.js';
import { translate } from '../translate.js';
import { syntheticState } from './generate.js';
import { packetFigures } from './packet-bench.js';
import { median, renderFigures } from './render-bench.js';

const f1 = (n: number) => n.toFixed(1);

async function main(): Promise<void> {
  const root = process.getuid?.() === 0;
  const ns = root ? await Netns.create('npbench') : undefined;
  try {
    console.log(`# @flock/netpol benchmark — ${new Date().toISOString()}, node ${process.version}`);
    console.log(
      '\n| policies | pods | parse ms | translate ms | render ms | script KiB | set elements | nft -f first ms | nft -f replace ms | total (translate+render+replace) ms |',
    );
    console.log('| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |');
    for (const policies of [100, 1000]) {
      for (const pods of [1000, 10000]) {
        const f = await renderFigures(policies, pods);
        let first = NaN;
        let replace = NaN;
        if (ns) {
          await ns.exec('nft', ['flush', 'ruleset']);
          const apply = nftRunner({ netns: ns.name });
          const t0 = performance.now();
          await apply(f.script);
          first = performance.now() - t0;
          replace = await median(3, () => apply(f.script));
        }
        console.log(
          `| ${policies} | ${pods} | ${f1(f.parseMs)} | ${f1(f.translateMs)} | ${f1(f.renderMs)} | ${f.scriptKiB} | ${f.elements} | ${f1(first)} | ${f1(replace)} | ${f1(f.translateMs + f.renderMs + replace)} |`,
        );
      }
    }
    // One pod changes (a new pod appears) in the largest state: the agent's full path today.
    const raw = syntheticState({ policies: 1000, pods: 10000 });
    const base = parseState(raw);
    if (ns) await nftRunner({ netns: ns.name })(render(translate(base)));
    let n = 0;
    const oneChange = await median(5, async () => {
      const extra = {
        metadata: { name: `new-${n}`, namespace: 'ns-1', labels: { app: 'app-1', tier: 'web' } },
        status: { podIPs: [{ ip: `10.200.0.${n++ % 250}` }] },
      };
      const state = parseState({ ...raw, pods: [...(raw.pods ?? []), extra] });
      const script = render(translate(state));
      if (ns) await nftRunner({ netns: ns.name })(script);
    });
    console.log(
      `\none-pod change, 1000 policies × 10000 pods (parse + translate + render + nft -f): ${f1(oneChange)} ms`,
    );
    if (!root) {
      console.log('\n(not root: nft and per-packet figures skipped)');
      return;
    }
    const p = await packetFigures();
    console.log(
      '\nper-packet cost, pod → pod (IPv4) on one node: no flock table, flock table without policies, 1000 policies × 10000 pods loaded',
    );
    console.log(`rules in the loaded table: ${p.rules}`);
    console.log('| measure | no table | empty table | loaded | loaded / empty | loaded / none |');
    console.log('| --- | ---: | ---: | ---: | ---: | ---: |');
    const row = (
      what: string,
      v: Record<'none' | 'empty' | 'loaded', number>,
      cost: (a: number, b: number) => number,
    ) =>
      console.log(
        `| ${what} | ${f1(v.none)} | ${f1(v.empty)} | ${f1(v.loaded)} | ${cost(v.loaded, v.empty).toFixed(3)} | ${cost(v.loaded, v.none).toFixed(3)} |`,
      );
    row('ping -f round trip, µs (established flow)', p.pingUs, (a, b) => a / b);
    row('new TCP connections/s (every SYN walks the chains)', p.connects, (a, b) => b / a);
  } finally {
    await ns?.destroy();
  }
}

await main();
