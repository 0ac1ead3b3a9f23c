// `npm run bench -w @flock/netpol` (as root for the nft and packet parts): prints the figures
// recorded in docs/benchmarks/netpol.md. Not a test: nothing here passes or fails on time.
import { performance } from 'node:perf_hooks';
import { Netns } from '@flock/testkit';
import { nftRunner } from '../src/apply.js';
import { CHANGE_MODES, changeFigures, type ChangeMode } from './change-bench.js';
import { packetFigures } from './packet-bench.js';
import { median, renderFigures } from './render-bench.js';

const f1 = (n: number) => n.toFixed(1);

const CHANGE_LABEL: Record<ChangeMode, string> = {
  full: 'before: parse + translate + render + nft -f whole table (remote pod)',
  remote: 'after: incremental, a pod of another node (set elements added)',
  local: 'after: incremental, an isolated pod of this node (+ chain, map element)',
  gone: 'after: incremental, a pod of another node deleted (its sets flushed and re-declared)',
};

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
    // One pod changes (a new pod appears) in the largest state: before (whole state re-parsed,
    // re-translated, whole table replaced) and after (incremental translate + diff), alternated.
    const changeNs = root
      ? {
          full: await Netns.create('npchf'),
          remote: await Netns.create('npchr'),
          local: await Netns.create('npchl'),
          gone: await Netns.create('npchg'),
        }
      : undefined;
    try {
      const c = await changeFigures(changeNs);
      console.log(
        `\none-pod change, 1000 policies × 10000 pods, ${c.rounds} rounds alternated${root ? '' : ' (not root: no nft)'}`,
      );
      console.log(
        '| change | wall ms (median) | CPU ms node (mean) | CPU ms nft (mean) | wall / full | CPU / full |',
      );
      console.log('| --- | ---: | ---: | ---: | ---: | ---: |');
      const total = (m: ChangeMode) => c.cpuMs[m].node + c.cpuMs[m].nft;
      for (const mode of CHANGE_MODES) {
        console.log(
          `| ${CHANGE_LABEL[mode]} | ${f1(c.wallMs[mode])} | ${f1(c.cpuMs[mode].node)} | ${f1(c.cpuMs[mode].nft)} | ${(c.wallMs[mode] / c.wallMs.full).toFixed(3)} | ${(total(mode) / total('full')).toFixed(3)} |`,
        );
      }
      console.log(
        `applied: ${Object.entries(c.applied)
          .map(([k, v]) => `${k} ${v}`)
          .join(', ')}`,
      );
    } finally {
      for (const n of Object.values(changeNs ?? {})) await n.destroy();
    }
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
