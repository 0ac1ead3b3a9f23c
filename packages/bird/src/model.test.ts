import { describe, expect, it } from 'vitest';
import { BirdModel, BirdPeer, canonicalCidr, canonicalIp, peerProtocolName } from './model.js';

const base = {
  routerId: '192.0.2.10',
  asn: 65001,
  peers: [],
  aggregates: [],
  pinned: [],
  anycast: [],
};
const peer = { address: '2001:db8::1', asn: 65000 };

function issues(result: { success: boolean; error?: { issues: { message: string }[] } }): string[] {
  return result.error?.issues.map((i) => i.message) ?? [];
}

describe('canonicalIp', () => {
  it.each([
    ['2001:DB8::1', '2001:db8::1'],
    ['2001:db8:0:0:0:0:0:1', '2001:db8::1'],
    ['2001:db8:0:1:0:0:0:1', '2001:db8:0:1::1'], // the longer zero run is compressed
    ['2001:0:0:1:0:0:1:1', '2001::1:0:0:1:1'], // equal runs: the first one
    ['2001:db8:0:1:1:1:1:1', '2001:db8:0:1:1:1:1:1'], // a single zero group stays
    ['::', '::'],
    ['::1', '::1'],
    ['fe80::', 'fe80::'],
    ['::ffff:192.0.2.1', '::ffff:c000:201'],
    ['192.0.2.1', '192.0.2.1'],
  ])('%s → %s', (input, canonical) => {
    expect(canonicalIp(input)).toBe(canonical);
  });

  it('canonicalises CIDRs and refuses what is not an address', () => {
    expect(canonicalCidr('2001:DB8:0::/48')).toBe('2001:db8::/48');
    expect(() => canonicalIp('2001:db8::1%eth0')).toThrow(/not an IP address/);
  });
});

describe('peerProtocolName', () => {
  it('is a BIRD symbol derived from the canonical address', () => {
    expect(peerProtocolName('2001:db8::1')).toBe('peer_2001_db8__1');
    expect(peerProtocolName('2001:DB8:0::1')).toBe('peer_2001_db8__1');
    expect(peerProtocolName('192.0.2.1')).toBe('peer_192_0_2_1');
    const longest = peerProtocolName('2001:db8:1:2:3:4:5:6');
    expect(longest).toMatch(/^[A-Za-z_][A-Za-z0-9_]*$/);
    expect(longest.length).toBeLessThanOrEqual(64);
  });
});

describe('BirdModel', () => {
  it('accepts a full model', () => {
    const model = {
      ...base,
      peers: [
        {
          ...peer,
          password: 'x y!',
          holdTime: 9,
          keepaliveTime: 3,
          bfd: true,
          gracefulRestart: false,
        },
      ],
      aggregates: ['2001:db8:1::/64', '198.51.100.0/26'],
      pinned: ['2001:db8:99::7', '192.0.2.77'],
      anycast: ['2001:db8:aa::1'],
    };
    expect(BirdModel.parse(model)).toEqual(model);
  });

  it.each([
    ['a"b', 'quote'],
    ['a\\b', 'backslash'],
    ['a\nb', 'newline'],
    ['x'.repeat(81), 'too long'],
  ])('refuses the password %j (%s)', (password) => {
    expect(issues(BirdPeer.safeParse({ ...peer, password }))).toEqual([
      expect.stringMatching(/printable ASCII|at most|<=80|too big/i),
    ]);
  });

  it('refuses a keepalive not shorter than the hold time, except with hold time 0', () => {
    expect(issues(BirdPeer.safeParse({ ...peer, holdTime: 9, keepaliveTime: 9 }))).toEqual([
      'keepaliveTime must be shorter than holdTime',
    ]);
    expect(BirdPeer.safeParse({ ...peer, holdTime: 0, keepaliveTime: 9 }).success).toBe(true);
  });

  it('refuses a source address of the other family', () => {
    expect(issues(BirdPeer.safeParse({ ...peer, sourceAddress: '192.0.2.1' }))).toEqual([
      'sourceAddress must be of the same address family as the peer address',
    ]);
  });

  it('refuses link-local peers and BFD on multihop without a source address', () => {
    expect(issues(BirdPeer.safeParse({ ...peer, address: 'fe80::1' }))[0]).toMatch(/link-local/);
    expect(issues(BirdPeer.safeParse({ ...peer, bfd: true, multihop: 2 }))[0]).toMatch(
      /BFD on a multihop/,
    );
  });

  it('refuses two spellings of the same peer address', () => {
    const twice = { ...base, peers: [peer, { ...peer, address: '2001:DB8:0::1' }] };
    expect(issues(BirdModel.safeParse(twice))).toEqual([
      'peer 2001:DB8:0::1 is the same address as peers[0]',
    ]);
  });

  it('refuses bad prefixes and addresses', () => {
    expect(BirdModel.safeParse({ ...base, aggregates: ['2001:db8::1/64'] }).success).toBe(false);
    expect(BirdModel.safeParse({ ...base, pinned: ['2001:db8::/64'] }).success).toBe(false);
    expect(BirdModel.safeParse({ ...base, routerId: '2001:db8::1' }).success).toBe(false);
    expect(BirdModel.safeParse({ ...base, asn: 23456 }).success).toBe(false);
  });
});
