import { describe, expect, it } from 'vitest';
import { KubeProxyAddresses } from './kube-proxy-addresses.js';
import { parseMapListing, type KubeProxyView } from './kube-proxy-rules.js';

const settle = () => new Promise((r) => setTimeout(r, 0));

/** A gate over a fake read of `held` ("address protocol port"), on a clock the test moves. */
function gate(held: Set<string>) {
  const clock = { ms: 0 };
  const reads: number[] = [];
  const triggers: number[] = [];
  const view: KubeProxyView = { has: (a, p, n) => held.has(`${a} ${p} ${n}`) };
  const g = new KubeProxyAddresses(
    () => {
      reads.push(clock.ms);
      return Promise.resolve(view);
    },
    (ms) => triggers.push(ms),
    () => undefined,
    200,
    1_000,
    () => clock.ms,
  );
  return { g, clock, reads, triggers };
}

describe('KubeProxyAddresses', () => {
  it('reads at once for a new address, keeps a yes without reading again', async () => {
    const held = new Set<string>();
    const { g, reads, triggers } = gate(held);
    expect(g.has('2001:db8:400::2', 'TCP', 443)).toBe(false);
    await settle();
    expect(reads).toHaveLength(1);
    expect(triggers).toEqual([200]);
    held.add('2001:db8:400::2 TCP 443');
    expect(g.has('2001:db8:400:0::2', 'TCP', 443)).toBe(false); // same key, canonical
    expect(reads).toHaveLength(1); // within the retry delay: no read
  });

  it('backs off while nothing new is held, resets for a new address and after a yes', async () => {
    const held = new Set<string>();
    const { g, clock, reads, triggers } = gate(held);
    g.has('2001:db8:400::9', 'UDP', 53); // never held
    await settle();
    for (const step of [200, 400, 800, 1_000, 1_000]) {
      clock.ms += step - 1;
      g.has('2001:db8:400::9', 'UDP', 53);
      await settle();
      clock.ms += 1;
      g.has('2001:db8:400::9', 'UDP', 53);
      await settle();
    }
    expect(triggers).toEqual([200, 400, 800, 1_000, 1_000, 1_000]);
    expect(reads).toHaveLength(6);
    held.add('2001:db8:400::2 TCP 443');
    g.has('2001:db8:400::2', 'TCP', 443); // new: read at once
    await settle();
    expect(reads).toHaveLength(7);
    expect(triggers.at(-1)).toBe(0);
    expect(g.has('2001:db8:400::2', 'TCP', 443)).toBe(true);
    g.keep(new Set());
    expect(g.has('2001:db8:400::2', 'TCP', 443)).toBe(false); // forgotten: read afresh
  });

  it('a failed read keeps the addresses waiting', async () => {
    let errors = 0;
    const g = new KubeProxyAddresses(
      () => Promise.reject(new Error('nft: permission denied')),
      () => undefined,
      () => errors++,
    );
    await g.ask([['203.0.113.64', 'TCP', 80]]);
    expect(errors).toBe(1);
    expect(g.has('203.0.113.64', 'TCP', 80)).toBe(false);
  });
});

describe('parseMapListing', () => {
  it("reads the keys of kube-proxy's map as nft -j prints it", () => {
    const json = JSON.stringify({
      nftables: [
        { metainfo: { version: '1.0.6' } },
        {
          map: {
            family: 'ip6',
            name: 'service-ips',
            table: 'kube-proxy',
            elem: [
              [{ concat: ['2001:db8:400::3', 'udp', 53] }, { goto: { target: 'svc-x' } }],
              [{ concat: ['2001:0db8:400::2', 'tcp', 8080] }, { goto: { target: 'svc-y' } }],
              [{ concat: ['2001:db8:400::4', 'icmp', 1] }, { goto: { target: 'svc-z' } }],
              { unexpected: true },
            ],
          },
        },
      ],
    });
    expect(parseMapListing(json)).toEqual(['2001:db8:400::3 UDP 53', '2001:db8:400::2 TCP 8080']);
  });
});
