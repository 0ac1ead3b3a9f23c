import type { BirdPeer } from '@flock/bird';
import { describe, expect, it } from 'vitest';
import { needsBfdSource, withBfdSources } from './bfd-sources.js';

const multihop: BirdPeer = { address: '2001:db8:ffff::1', asn: 65000, multihop: 2, bfd: true };
const addresses = [
  { type: 'Hostname', address: 'lab-node-1' },
  { type: 'ExternalIP', address: '2001:db8:aa::2' },
  { type: 'InternalIP', address: '2001:db8:ff:1::2' },
  { type: 'InternalIP', address: '10.250.1.2' },
];

describe('withBfdSources', () => {
  it("gives a multihop BFD peer the Node's InternalIP of its family", () => {
    const v4: BirdPeer = { ...multihop, address: '10.250.0.1' };
    expect(withBfdSources([multihop, v4], addresses)).toEqual({
      peers: [
        { ...multihop, sourceAddress: '2001:db8:ff:1::2' },
        { ...v4, sourceAddress: '10.250.1.2' },
      ],
      warnings: [],
    });
  });

  it('falls back to an ExternalIP', () => {
    const only = addresses.filter((a) => a.type !== 'InternalIP');
    expect(withBfdSources([multihop], only).peers[0]?.sourceAddress).toBe('2001:db8:aa::2');
  });

  it('leaves direct peers, peers without BFD and peers with a sourceAddress alone', () => {
    const peers: BirdPeer[] = [
      { address: '192.0.2.1', asn: 65000, bfd: true },
      { ...multihop, bfd: false },
      { ...multihop, address: '2001:db8:ffff::9', sourceAddress: '2001:db8:1::1' },
    ];
    expect(peers.some(needsBfdSource)).toBe(false);
    expect(withBfdSources(peers, addresses)).toEqual({ peers, warnings: [] });
  });

  it('without an address of the family: the peer stays, its BFD goes, and a warning says why', () => {
    const timed: BirdPeer = {
      ...multihop,
      bfdTimers: { minRxIntervalMs: 100, minTxIntervalMs: 100, multiplier: 3 },
    };
    const result = withBfdSources([timed], [{ type: 'InternalIP', address: '10.250.1.2' }]);
    expect(result.peers).toEqual([{ address: '2001:db8:ffff::1', asn: 65000, multihop: 2 }]);
    expect(result.warnings).toEqual([
      expect.stringMatching(/2001:db8:ffff::1: BFD left off: .* no IPv6 InternalIP or ExternalIP/),
    ]);
  });
});
