import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import fc from 'fast-check';
import { DEFAULT_BFD_TIMERS } from '@flock/api';
import { describe, expect, it } from 'vitest';
import { formatIp, type BirdModel, type BirdPeer } from './model.js';
import { announcedPrefixes, renderBirdConfig } from './render.js';

// Golden files: review a diff of these like code. UPDATE_GOLDEN=1 rewrites them.
const GOLDEN = join(import.meta.dirname, '__fixtures__', 'golden');

const base: BirdModel = {
  routerId: '192.0.2.10',
  asn: 65001,
  peers: [],
  aggregates: [],
  pinned: [],
  anycast: [],
};

const ipv6Peer: BirdPeer = {
  address: '2001:db8:ffff::1',
  asn: 65000,
  sourceAddress: '2001:db8:ffff::2',
  password: "s3cret pass'word",
  holdTime: 9,
  keepaliveTime: 3,
  connectDelayTime: 1,
  connectRetryTime: 2,
  errorWaitTime: { min: 1, max: 5 },
};

const EXAMPLES: Record<string, BirdModel> = {
  // Nothing to announce and nobody to tell: both filters reject everything.
  empty: base,
  // Aggregates of both families; an IPv4-only node would simply have no IPv6 entries.
  aggregates: { ...base, aggregates: ['2001:db8:1::/64', '198.51.100.0/26'] },
  // Pinned and anycast host routes: canonicalised (upper case, zero groups), de-duplicated, sorted.
  'host-routes': {
    ...base,
    aggregates: ['2001:db8:1::/64'],
    pinned: ['2001:db8:99::7', '2001:DB8:99:0:0::7', '192.0.2.77', '2001:db8:99::10'],
    anycast: ['2001:db8:aa::1', '192.0.2.200', '2001:db8:99::7'],
  },
  // An IPv6 peer with every session option: both channels, IPv4 with extended next hop.
  'ipv6-peer': { ...base, aggregates: ['2001:db8:1::/64', '198.51.100.0/26'], peers: [ipv6Peer] },
  // IPv4 peers carry only IPv4; BFD (with multihop it needs a source address); GR off.
  'ipv4-peer': {
    ...base,
    aggregates: ['198.51.100.0/26'],
    peers: [
      {
        address: '203.0.113.1',
        asn: 65000,
        bfd: true,
        bfdTimers: { minRxIntervalMs: 100, minTxIntervalMs: 150, multiplier: 4 },
        multihop: 2,
        sourceAddress: '203.0.113.2',
      },
      {
        address: '198.51.100.254',
        asn: 65000,
        gracefulRestart: false,
        holdTime: 0,
        keepaliveTime: 10,
      },
    ],
  },
  // Communities per class and per address, and a local preference for the iBGP peer only.
  communities: {
    ...base,
    aggregates: ['2001:db8:1::/64', '198.51.100.0/26'],
    pinned: ['2001:db8:99::7', '2001:db8:99::8', '192.0.2.77'],
    anycast: ['2001:db8:aa::1'],
    peers: [
      { address: '2001:db8:ffff::1', asn: 65000 },
      { address: '203.0.113.1', asn: 65001 },
    ],
    localPreference: 200,
    communities: {
      aggregates: { standard: ['65000:100', '65000:0100'], large: ['4200000000:1:2'] },
      pinned: { standard: ['65535:65281', '65000:200'] },
      anycast: { large: ['65000:3:0'] },
    },
    addressCommunities: [
      { address: '2001:db8:99::8', standard: ['65000:666'] },
      { address: '2001:DB8:99::7', standard: ['65000:666'] },
      { address: '2001:db8:aa::1', large: ['65000:9:9'] },
      { address: '192.0.2.77', standard: ['65000:666'], large: ['65000:9:9'] },
      { address: '2001:db8:dead::1', standard: ['65000:1'] }, // not announced: left out
    ],
  },
  // Service addresses (host routes) and Service CIDRs, with the services class's communities.
  services: {
    ...base,
    aggregates: ['2001:db8:1::/64'],
    services: ['2001:db8:400::5', '203.0.113.70', '2001:DB8:400::5'],
    serviceRanges: ['fd00:10:96::/112', '10.96.0.0/16'],
    peers: [{ address: '2001:db8:ffff::1', asn: 65000 }],
    communities: { services: { standard: ['65000:400'] } },
  },
  // The README's example (the test below keeps the README in step).
  readme: {
    routerId: '192.0.2.10',
    asn: 65001,
    peers: [
      {
        address: '2001:db8:ffff::1',
        asn: 65000,
        password: 'example-only',
        holdTime: 90,
        bfd: true,
      },
    ],
    aggregates: ['2001:db8:1::/64', '198.51.100.0/26'],
    pinned: ['2001:db8:99::7', '192.0.2.77'],
    anycast: ['2001:db8:aa::1'],
  },
};

describe('renderBirdConfig: golden files', () => {
  for (const [name, model] of Object.entries(EXAMPLES)) {
    it(`renders ${name}`, () => {
      const file = join(GOLDEN, `${name}.conf`);
      const rendered = renderBirdConfig(model);
      if (process.env['UPDATE_GOLDEN'] === '1') writeFileSync(file, rendered);
      expect(rendered).toBe(readFileSync(file, 'utf8'));
    });
  }

  it('keeps the README example in step with the renderer', () => {
    const readme = readFileSync(join(import.meta.dirname, '..', 'README.md'), 'utf8');
    const block = /```conf\n([\s\S]*?)```/.exec(readme)?.[1];
    expect(block).toBe(renderBirdConfig(EXAMPLES['readme'] as BirdModel));
  });
});

describe('renderBirdConfig: details', () => {
  it('drops keepalive time when hold time 0 switches keepalives off (BIRD refuses both)', () => {
    const text = renderBirdConfig(EXAMPLES['ipv4-peer'] as BirdModel);
    expect(text).toContain('hold time 0;');
    expect(text).not.toContain('keepalive time 10;');
  });

  it('renders a BFD protocol only when a peer asks for BFD', () => {
    expect(renderBirdConfig(EXAMPLES['ipv4-peer'] as BirdModel)).toContain(
      'protocol bfd flock_bfd {',
    );
    expect(renderBirdConfig(EXAMPLES['ipv6-peer'] as BirdModel)).not.toContain('protocol bfd');
  });

  it("writes each BFD session's timers, flock's defaults (300 ms × 3) when none are given", () => {
    expect(renderBirdConfig(EXAMPLES['ipv4-peer'] as BirdModel)).toContain(
      '  bfd { min rx interval 100 ms; min tx interval 150 ms; multiplier 4; };',
    );
    expect(renderBirdConfig(EXAMPLES['readme'] as BirdModel)).toContain(
      '  bfd { min rx interval 300 ms; min tx interval 300 ms; multiplier 3; };',
    );
    const off = { ...base, peers: [{ ...ipv6Peer, bfdTimers: DEFAULT_BFD_TIMERS }] };
    expect(renderBirdConfig(off)).not.toMatch(/bfd/);
  });

  it('sets the local preference through the iBGP filter, for iBGP peers only', () => {
    const model = EXAMPLES['communities'] as BirdModel;
    const text = renderBirdConfig(model);
    const exportOf = (protocol: string) =>
      [
        ...(
          new RegExp(`protocol bgp ${protocol} \\{[\\s\\S]*?\\n\\}`).exec(text)?.[0] ?? ''
        ).matchAll(/export filter (\S+);/g),
      ].map((m) => m[1]);
    expect(exportOf('peer_203_0_113_1')).toEqual(['flock_export4_ibgp']); // asn 65001 = ours
    expect(exportOf('peer_2001_db8_ffff__1')).toEqual(['flock_export6', 'flock_export4']);
    expect(text).not.toContain('flock_export6_ibgp'); // no iBGP session carries IPv6
    expect(text.match(/bgp_local_pref = 200;/g)).toHaveLength(1);
    const noPref = renderBirdConfig({ ...model, localPreference: undefined });
    expect(noPref).not.toMatch(/_ibgp|bgp_local_pref/);
  });

  it('refuses an invalid model instead of writing it into the file', () => {
    const bad = { ...base, peers: [{ ...ipv6Peer, password: 'a"; } protocol kernel {' }] };
    expect(() => renderBirdConfig(bad)).toThrow(/double quote or backslash/);
    expect(() => renderBirdConfig({ ...base, aggregates: ['2001:db8:1::1/64'] })).toThrow(
      /host bits/,
    );
    const badCommunity = [{ address: '2001:db8::1', standard: ['65000:100)); reject; ((1:1'] }];
    expect(() => renderBirdConfig({ ...base, addressCommunities: badCommunity })).toThrow(
      /standard community/,
    );
  });
});

// Random addresses in the documentation ranges, in both text spellings BIRD and users produce.
const v6 = fc
  .bigInt({ min: 0n, max: (1n << 96n) - 1n })
  .map((low) => formatIp((0x20010db8n << 96n) | low, 6));
const v4 = fc.integer({ min: 0, max: 255 }).map((low) => `192.0.2.${low}`);
const host = fc.oneof(
  v6,
  v4,
  v6.map((a) => a.toUpperCase()),
);
const hostModel = fc.record({
  pinned: fc.array(host, { maxLength: 30 }),
  anycast: fc.array(host, { maxLength: 10 }),
});

describe('renderBirdConfig: properties', () => {
  it('gives the same bytes whatever the order of peers and addresses', () => {
    const full = EXAMPLES['host-routes'] as BirdModel;
    const peers = [
      ipv6Peer,
      { address: '203.0.113.1', asn: 65000 },
      { address: '2001:db8:ffff::9', asn: 65002 },
    ];
    const expected = renderBirdConfig({ ...full, peers });
    fc.assert(
      fc.property(
        fc.shuffledSubarray(peers, { minLength: 3, maxLength: 3 }),
        fc.shuffledSubarray(full.pinned, {
          minLength: full.pinned.length,
          maxLength: full.pinned.length,
        }),
        fc.shuffledSubarray(full.anycast, {
          minLength: full.anycast.length,
          maxLength: full.anycast.length,
        }),
        (p, pinned, anycast) => {
          expect(renderBirdConfig({ ...full, peers: p, pinned, anycast })).toBe(expected);
        },
      ),
    );
  });

  it('puts exactly the modelled prefixes into the export sets and the static routes', () => {
    fc.assert(
      fc.property(hostModel, ({ pinned, anycast }) => {
        const model = {
          ...base,
          aggregates: ['2001:db8:1::/64', '198.51.100.0/26'],
          pinned,
          anycast,
        };
        const text = renderBirdConfig(model);
        const expected = announcedPrefixes(model);
        const set = (name: string) => {
          const body = new RegExp(`filter ${name} \\{\\n([\\s\\S]*?)\\n\\}`).exec(text)?.[1] ?? '';
          return [...body.matchAll(/^ {4}(\S+?),?$/gm)].map((m) => m[1]);
        };
        expect(set('flock_export6')).toEqual(expected[6]);
        expect(set('flock_export4')).toEqual(expected[4]);
        const routes = [...text.matchAll(/^ {2}route (\S+) blackhole;$/gm)].map((m) => m[1]);
        expect(new Set(routes)).toEqual(new Set([...expected[6], ...expected[4]]));
        const wanted = new Set(
          [...pinned, ...anycast].map((a) => (a.includes(':') ? a.toLowerCase() : a)),
        );
        expect(expected[6].length + expected[4].length).toBe(wanted.size + 2);
      }),
    );
  });
});
