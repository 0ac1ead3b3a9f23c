import type { ProtocolDetail } from '@flock/bird';
import { describe, expect, it } from 'vitest';
import { entry } from '../../testing/routing-fixtures.js';
import { computeNodeStatus, stableJson, type StatusInputs } from './status-compute.js';

const T1 = new Date('2026-11-29T10:00:00Z');
const T2 = new Date('2026-11-29T11:00:00Z');
const P1 = { address: '2001:db8:ffff::1', asn: 65000 };
const P2 = { address: '2001:db8:ffff::2', asn: 65000 };

const protocol = (name: string, bgpState: string, info = bgpState): ProtocolDetail => ({
  name,
  proto: 'BGP',
  table: '---',
  state: bgpState === 'Established' ? 'up' : 'start',
  since: '2026-11-29 09:59:00',
  info,
  bgpState,
  channels: [],
});

const inputs = (over: Partial<StatusInputs> = {}): StatusInputs => ({
  generation: 3,
  announcer: { status: 'applied' },
  configuredPeers: [P1, P2],
  peers: [P1, P2],
  peerProblems: [],
  bgp: {
    protocols: [
      protocol('peer_2001_db8_ffff__1', 'Established'),
      protocol('peer_2001_db8_ffff__2', 'Established'),
    ],
  },
  entries: [
    entry('a', { ip4: '192.0.2.17', anycast: ['2001:db8:300::1'] }),
    entry('b', { ip6: '2001:db8:200::1', pinned: true }),
    entry('c', { state: 'pending' }),
  ],
  anycastAnnounced: 1,
  advertisedRoutes: 4,
  ...over,
});

const condition = (s: ReturnType<typeof computeNodeStatus>, type: string) =>
  s.conditions?.find((c) => c.type === type);

describe('NodeConfig status', () => {
  it('all sessions up: Ready, BGPEstablished True, counts, generation', () => {
    const s = computeNodeStatus(inputs(), undefined, T1);
    expect(s.observedGeneration).toBe(3);
    expect(s.conditions?.map((c) => [c.type, c.status, c.reason])).toEqual([
      ['Ready', 'True', 'AgentReady'],
      ['BGPEstablished', 'True', 'AllPeersEstablished'],
      ['PolicyApplied', 'Unknown', 'NotReported'],
    ]);
    expect(s.conditions?.every((c) => c.observedGeneration === 3)).toBe(true);
    expect(s.allocations).toEqual({
      pods: 2,
      ipv6: 2,
      ipv4: 1,
      ipv4Modes: { public: 1, private: 0, nat64: 0, none: 1 },
      pinned: 1,
      anycast: 1,
    });
    expect(s.advertisedRoutes).toBe(4);
    expect(s.bgpPeers?.map((p) => [p.address, p.state, p.protocol])).toEqual([
      [P1.address, 'Established', 'peer_2001_db8_ffff__1'],
      [P2.address, 'Established', 'peer_2001_db8_ffff__2'],
    ]);
  });

  it('counts IPv6-only pods as nat64 on a node with NAT64', () => {
    const nat64 = { prefix: '64:ff9b::/96', pool: '192.168.240.0/20' };
    const s = computeNodeStatus(
      inputs({ ipv4Node: { cidr4: '192.0.2.16/28', nat64 } }),
      undefined,
      T1,
    );
    expect(s.allocations?.ipv4Modes).toEqual({ public: 1, private: 0, nat64: 1, none: 0 });
  });

  it('lists the sessions that are not established, and the peers left out', () => {
    const s = computeNodeStatus(
      inputs({
        peers: [P1],
        peerProblems: [{ ...P2, message: 'password Secret flock-system/bgp not found' }],
        bgp: {
          protocols: [
            protocol('peer_2001_db8_ffff__1', 'Active', 'Active  Socket: Connection refused'),
          ],
        },
      }),
      undefined,
      T1,
    );
    expect(condition(s, 'BGPEstablished')).toMatchObject({
      status: 'False',
      reason: 'PeersNotEstablished',
      message:
        '2 of 2 BGP sessions not established: 2001:db8:ffff::1 Active (Socket: Connection refused); 2001:db8:ffff::2 NotConfigured (password Secret flock-system/bgp not found)',
    });
  });

  it('a session on a password whose Secret cannot be re-read: still Established, and said so', () => {
    const message = 'cannot read Secret flock-system/bgp: 503; BIRD keeps the last password read';
    const s = computeNodeStatus(inputs({ stalePasswords: [{ ...P1, message }] }), undefined, T1);
    expect(s.bgpPeers?.[0]).toMatchObject({
      state: 'Established',
      info: message,
    });
    expect(condition(s, 'BGPEstablished')).toMatchObject({
      status: 'True',
      reason: 'AllPeersEstablished',
      message: expect.stringContaining('the password Secret of 2001:db8:ffff::1 cannot be read'),
    });
  });

  it('no peers: BGPEstablished Unknown; BIRD down: False BirdUnavailable with peers Unknown', () => {
    const none = computeNodeStatus(inputs({ configuredPeers: [], peers: [] }), undefined, T1);
    expect(condition(none, 'BGPEstablished')).toMatchObject({
      status: 'Unknown',
      reason: 'NoPeers',
    });
    const down = computeNodeStatus(
      inputs({
        announcer: { status: 'unreachable', message: 'ENOENT', since: 0 },
        bgp: { error: 'BIRD control socket unavailable' },
      }),
      undefined,
      T1,
    );
    expect(condition(down, 'BGPEstablished')).toMatchObject({
      status: 'False',
      reason: 'BirdUnavailable',
    });
    const pollFailed = computeNodeStatus(inputs({ bgp: { error: 'ECONNREFUSED' } }), undefined, T1);
    expect(condition(pollFailed, 'BGPEstablished')).toMatchObject({
      status: 'False',
      reason: 'BirdUnavailable',
      message: 'BIRD is not answering: ECONNREFUSED',
    });
    expect(down.bgpPeers?.map((p) => [p.state, p.info])).toEqual([
      ['Unknown', 'BIRD control socket unavailable'],
      ['Unknown', 'BIRD control socket unavailable'],
    ]);
  });

  it('Ready False for an unusable NodeConfig, an invalid model or a refused config', () => {
    const reasons = [
      inputs({ unusable: 'cidr6 does not parse' }),
      inputs({ announcer: { status: 'invalid', message: 'routerId: bad' } }),
      inputs({ announcer: { status: 'refused', message: 'syntax error' } }),
    ].map((i) => condition(computeNodeStatus(i, undefined, T1), 'Ready'));
    expect(reasons.map((c) => [c?.status, c?.reason])).toEqual([
      ['False', 'NodeConfigUnusable'],
      ['False', 'BgpConfigInvalid'],
      ['False', 'BirdConfigRefused'],
    ]);
  });

  it('PolicyApplied follows the policy report', () => {
    const ok = computeNodeStatus(
      inputs({ policy: { ok: true, reason: 'Applied', message: '3 local pods' } }),
      undefined,
      T1,
    );
    expect(condition(ok, 'PolicyApplied')).toMatchObject({ status: 'True', reason: 'Applied' });
    const bad = computeNodeStatus(
      inputs({ policy: { ok: false, message: 'nft failed' } }),
      undefined,
      T1,
    );
    expect(condition(bad, 'PolicyApplied')).toMatchObject({
      status: 'False',
      reason: 'PolicyFailed',
    });
  });

  it('keeps lastTransitionTime while a condition keeps its status; equal inputs give equal JSON', () => {
    const first = computeNodeStatus(inputs(), undefined, T1);
    const again = computeNodeStatus(inputs(), first.conditions, T2);
    expect(stableJson(again)).toBe(stableJson(first));
    const down = computeNodeStatus(
      inputs({ bgp: { protocols: [protocol('peer_2001_db8_ffff__1', 'Established')] } }),
      first.conditions,
      T2,
    );
    expect(condition(down, 'BGPEstablished')?.lastTransitionTime).toBe('2026-11-29T11:00:00Z');
    expect(condition(down, 'Ready')?.lastTransitionTime).toBe('2026-11-29T10:00:00Z');
    expect(stableJson({ b: 1, a: { d: 2, c: 3 } })).toBe(stableJson({ a: { c: 3, d: 2 }, b: 1 }));
  });
});
