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
      0, // every read lists the table
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

  it('one listing for scrapes that overlap or come within maxAgeMs; never counted twice', async () => {
    let lists = 0;
    let release!: () => void;
    let gate = new Promise<void>((r) => (release = r));
    let packets = 5;
    const clock = { now: 0 };
    const drops = new DropCounters(
      async () => {
        lists++;
        await gate;
        return listing({ ingress_fa: packets });
      },
      () => new Map([['fa', { namespace: 'x', pod: 'a' }]]),
      1000,
      () => clock.now,
    );
    const scrapes = [drops.read(), drops.read(), drops.read()];
    release();
    const answers = await Promise.all(scrapes);
    expect(lists).toBe(1);
    for (const a of answers)
      expect(a).toEqual([{ namespace: 'x', pod: 'a', direction: 'ingress', packets: 5 }]);
    clock.now = 999;
    await drops.read();
    expect(lists).toBe(1);
    // Past maxAgeMs: listed again, and the totals move by what the kernel added.
    gate = Promise.resolve();
    packets = 7;
    clock.now = 1000;
    expect((await drops.read())[0]!.packets).toBe(7);
    expect(lists).toBe(2);
  });
});
