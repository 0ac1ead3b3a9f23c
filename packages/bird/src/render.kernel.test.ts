// Any valid model renders to a configuration the real BIRD accepts (`bird -p -c`), run inside a
// namespace of the test's own.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import fc from 'fast-check';
import { Netns, requireKernelTier } from '@flock/testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { checkBirdConfig } from '../testing/bird-process.js';
import { BirdModel, formatIp, type BirdPeer } from './model.js';
import { renderBfdSpeakerConfig, withoutBfd } from './render-bfd-speaker.js';
import { renderBirdConfig } from './render.js';

const RESERVED_ASNS = [23456, 65535];
const asn = fc.integer({ min: 1, max: 4294967294 }).filter((n) => !RESERVED_ASNS.includes(n));
const v6 = fc.bigInt({ min: 0n, max: (1n << 128n) - 1n }).map((n) => formatIp(n, 6));
const globalV6 = fc
  .bigInt({ min: 0n, max: (1n << 125n) - 1n })
  .map((n) => formatIp((1n << 125n) | n, 6)); // 2000::/3
const v4 = fc.ipV4();
const seconds = fc.integer({ min: 1, max: 65535 });
const password = fc.stringMatching(/^[\x20-\x21\x23-\x5b\x5d-\x7e]{1,80}$/);

function cidr(family: 4 | 6) {
  const width = family === 6 ? 128 : 32;
  return fc
    .record({
      value: fc.bigInt({ min: 0n, max: (1n << BigInt(width)) - 1n }),
      length: fc.integer({ min: 0, max: width }),
    })
    .map(({ value, length }) => {
      const host = BigInt(width - length);
      return `${formatIp((value >> host) << host, family)}/${length}`;
    });
}

function peer(family: 4 | 6): fc.Arbitrary<BirdPeer> {
  const address = family === 6 ? globalV6 : v4;
  return fc
    .record(
      {
        address,
        asn,
        sourceAddress: address,
        password,
        holdTime: fc.oneof(fc.constant(0), fc.integer({ min: 3, max: 65535 })),
        keepaliveTime: fc.integer({ min: 1, max: 21845 }),
        gracefulRestart: fc.boolean(),
        bfd: fc.boolean(),
        bfdTimers: fc.record({
          minRxIntervalMs: fc.integer({ min: 10, max: 60_000 }),
          minTxIntervalMs: fc.integer({ min: 10, max: 60_000 }),
          multiplier: fc.integer({ min: 1, max: 255 }),
        }),
        multihop: fc.integer({ min: 1, max: 255 }),
        connectDelayTime: seconds,
        connectRetryTime: seconds,
        errorWaitTime: fc
          .tuple(seconds, seconds)
          .map(([a, b]) => ({ min: Math.min(a, b), max: Math.max(a, b) })),
      },
      { requiredKeys: ['address', 'asn'] },
    )
    .map((p) => {
      const fixed = { ...p };
      // Keep the generated peer valid: keepalive below hold, BFD+multihop with a source address.
      if (
        fixed.keepaliveTime !== undefined &&
        fixed.holdTime !== undefined &&
        fixed.holdTime !== 0
      ) {
        fixed.keepaliveTime = Math.max(1, Math.min(fixed.keepaliveTime, fixed.holdTime - 1));
      }
      if (fixed.bfd && fixed.multihop !== undefined)
        fixed.sourceAddress ??= family === 6 ? '2001:db8::1' : '192.0.2.1';
      return fixed;
    });
}

const u16 = fc.integer({ min: 0, max: 65535 });
const u32 = fc.integer({ min: 0, max: 4294967295 });
const communities = fc.record(
  {
    standard: fc.array(
      fc.tuple(u16, u16).map((p) => p.join(':')),
      { maxLength: 3 },
    ),
    large: fc.array(
      fc.tuple(u32, u32, u32).map((p) => p.join(':')),
      { maxLength: 3 },
    ),
  },
  { requiredKeys: [] },
);

const model: fc.Arbitrary<BirdModel> = fc
  .record(
    {
      routerId: v4,
      asn,
      peers: fc.uniqueArray(fc.oneof(peer(6), peer(4)), {
        maxLength: 4,
        selector: (p) => p.address,
      }),
      aggregates: fc.array(fc.oneof(cidr(6), cidr(4)), { maxLength: 4 }),
      pinned: fc.array(fc.oneof(v6, v4), { maxLength: 20 }),
      anycast: fc.array(fc.oneof(v6, v4), { maxLength: 8 }),
      services: fc.array(fc.oneof(v6, v4), { maxLength: 8 }),
      serviceRanges: fc.array(fc.oneof(cidr(6), cidr(4)), { maxLength: 2 }),
      localPreference: u32,
      communities: fc.record(
        {
          aggregates: communities,
          pinned: communities,
          anycast: communities,
          services: communities,
        },
        { requiredKeys: [] },
      ),
      addressCommunities: fc.array(
        fc.tuple(fc.oneof(v6, v4), communities).map(([address, c]) => ({ address, ...c })),
        { maxLength: 6 },
      ),
    },
    { requiredKeys: ['routerId', 'asn', 'peers', 'aggregates', 'pinned', 'anycast'] },
  )
  // Some peers share the node's ASN (iBGP), and some pods' addresses carry communities.
  .map((m) => ({
    ...m,
    peers: m.peers.map((p, i) => (i % 2 ? { ...p, asn: m.asn } : p)),
    addressCommunities: [
      ...(m.addressCommunities ?? []),
      ...m.pinned.slice(0, 3).map((address) => ({ address, standard: ['65000:1'] })),
    ],
  }))
  .filter((m) => BirdModel.safeParse(m).success);

describe('renderBirdConfig against bird -p (kernel)', () => {
  let ns: Netns;
  let dir: string;
  beforeAll(async () => {
    requireKernelTier('bird');
    ns = await Netns.create('brdp');
    dir = mkdtempSync(join(tmpdir(), 'flock-bird-parse-'));
  });
  afterAll(async () => {
    await ns?.destroy();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it('any valid model renders to a configuration BIRD accepts', async () => {
    let n = 0;
    await fc.assert(
      fc.asyncProperty(model, async (m) => {
        n++;
        const path = join(dir, `bird-${n}.conf`);
        writeFileSync(path, renderBirdConfig(m));
        expect(
          await checkBirdConfig(path, (file, args, options) => ns.exec(file, args, options)),
        ).toEqual({ ok: true });
        // With a BFD speaker beside it: the BGP BIRD's config without BFD, and the speaker's.
        const split = join(dir, `bird-${n}-bgp.conf`);
        const speaker = join(dir, `bird-${n}-bfd.conf`);
        writeFileSync(split, renderBirdConfig(withoutBfd(m)));
        writeFileSync(speaker, renderBfdSpeakerConfig(m));
        for (const p of [split, speaker])
          expect(
            await checkBirdConfig(p, (file, args, options) => ns.exec(file, args, options)),
          ).toEqual({ ok: true });
      }),
      { numRuns: 300 },
    );
  });

  it('reports what BIRD says about a configuration it refuses', async () => {
    const path = join(dir, 'broken.conf');
    writeFileSync(path, 'router id 192.0.2.1;\nprotocol device {\n  scan time 10\n}\n');
    const result = await checkBirdConfig(path, (file, args, options) =>
      ns.exec(file, args, options),
    );
    expect(result).toEqual({
      ok: false,
      message: `${path}:4:1 syntax error, unexpected '}', expecting ';'`,
    });
  });
});
