import { describe, expect, it } from 'vitest';
import { DropCounters, parseDropCounters } from './drop-counters.js';

const listing = (chains: Record<string, number>) =>
  JSON.stringify({
    nftables: [
      { metainfo: { version: '1.0.6' } },
      { table: { family: 'inet', name: 'flock' } },
      ...Object.entries(chains).flatMap(([chain, packets]) => [
        {
          rule: { chain, expr: [{ limit: { rate: 5, per: 'second' } }, { log: { prefix: 'p' } }] },
        },
        { rule: { chain, expr: [{ counter: { packets, bytes: packets * 60 } }, { drop: null }] } },
      ]),
      {
        rule: { chain: 'forward', expr: [{ counter: { packets: 99, bytes: 1 } }, { drop: null }] },
      },
    ],
  });

describe('drop counters', () => {
  it('takes the counted drop of pod chains only', () => {
    expect(parseDropCounters(listing({ ingress_fa: 3, egress_fa: 1 }))).toEqual(
      new Map([
        ['ingress_fa', 3],
        ['egress_fa', 1],
      ]),
    );
  });

  it('keeps running totals across resets, forgets chains that went, names pods by veth', async () => {
    let now = listing({ ingress_fa: 4, ingress_fb: 1 });
    const drops = new DropCounters(
      () => Promise.resolve(now),
      () => new Map([['fa', { namespace: 'x', pod: 'a' }]]),
    );
    expect(await drops.read()).toEqual([
      { namespace: 'x', pod: 'a', direction: 'ingress', packets: 4 },
    ]);
    now = listing({ ingress_fa: 1 }); // the chain was replaced
    expect((await drops.read())[0]?.packets).toBe(5);
    now = listing({});
    expect(await drops.read()).toEqual([]);
    now = listing({ ingress_fa: 2 });
    expect((await drops.read())[0]?.packets).toBe(2);
    const failing = new DropCounters(
      () => Promise.reject(new Error('no such table')),
      () => new Map(),
    );
    expect(await failing.read()).toEqual([]);
  });
});
