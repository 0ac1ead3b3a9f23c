// The real twin of the drop counters' unit tests: `nft -j list table` of a real table in a node
// namespace, its pod chains' counters (set in the script, as nft allows), read as totals.
import { Netns, requireKernelTier } from '@flock/testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DropCounters, nftListTable } from './drop-counters.js';
import { policyNftRun } from './nft.js';

let node: Netns;
beforeAll(async () => {
  requireKernelTier('nft');
  node = await Netns.create('poldrop');
});
afterAll(async () => {
  await node?.destroy();
});

const table = (ingress: number, egress: number) =>
  [
    'table inet flock {}',
    'delete table inet flock',
    'table inet flock {',
    '\tchain ingress_flock0000000a {',
    '\t\tlimit rate 5/second burst 10 packets log prefix "flock-drop ingress x/a: " level info',
    `\t\tcounter packets ${ingress} bytes ${ingress * 60} drop`,
    '\t}',
    '\tchain egress_flock0000000a {',
    `\t\tcounter packets ${egress} bytes ${egress * 60} drop`,
    '\t}',
    '\tchain forward {',
    '\t\ttype filter hook forward priority filter; policy accept;',
    '\t\tct state established,related accept',
    '\t}',
    '}',
    '',
  ].join('\n');

describe('drop counters from the kernel', () => {
  it('reads each pod chain’s counted drop; a replaced table (counters at 0 again) keeps the totals', async () => {
    const run = policyNftRun(node.path);
    const drops = new DropCounters(
      nftListTable(node.path),
      () => new Map([['flock0000000a', { namespace: 'x', pod: 'a' }]]),
      0, // every read lists the table
    );
    expect(await drops.read()).toEqual([]); // no table yet
    await run(table(7, 2));
    const byDirection = async () =>
      Object.fromEntries((await drops.read()).map((d) => [d.direction, d.packets]));
    expect(await byDirection()).toEqual({ ingress: 7, egress: 2 });
    await run(table(3, 2)); // replaced: the kernel starts again from what the script says
    expect(await byDirection()).toEqual({ ingress: 10, egress: 2 });
    await run(table(5, 4));
    expect(await byDirection()).toEqual({ ingress: 12, egress: 4 });
  });
});
