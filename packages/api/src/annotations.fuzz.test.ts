// Bad input, pod annotations: the ip-algo, pinned-ip and anycast parsers on arbitrary text
// and on generated address lists. They never throw; what they accept round-trips through
// its own text; what they refuse comes with a message naming the annotation and the value.
// Acceptance is checked against an independent oracle (node:net and ip-address).
import { isIP } from 'node:net';
import fc from 'fast-check';
import { Address4, Address6 } from 'ip-address';
import { describe, expect, it } from 'vitest';
import {
  IpAlgo,
  MAX_ANYCAST_PER_POD,
  parseAnycast,
  parseIpAlgo,
  parsePinnedIp,
  type Parsed,
} from './annotations.js';

const RUNS = process.env['FLOCK_SOAK'] === '1' ? 100_000 : 10_000;
const TIMEOUT = process.env['FLOCK_SOAK'] === '1' ? 600_000 : 60_000;

/** Addresses in every spelling: canonical, expanded, upper case, embedded IPv4, zone IDs. */
const v6 = fc.oneof(
  fc.ipV6(),
  fc.ipV6().map((a) => a.toUpperCase()),
  fc.ipV6().map((a) => new Address6(a).canonicalForm()),
  fc.constantFrom(
    '::',
    '::1',
    '2001:db8::1',
    '2001:DB8:0:0::1',
    '::ffff:192.0.2.1',
    'fe80::1%eth0',
  ),
);
const v4 = fc.oneof(fc.ipV4(), fc.ipV4Extended(), fc.constantFrom('0.0.0.0', '010.1.2.3'));
const junkItem = fc.oneof(
  fc.string({ maxLength: 12 }),
  fc.constantFrom('', ' ', ';', '$(id)', '2001:db8::1/64', '192.0.2.1:80', '1.2.3', '::g'),
);
const item = fc.oneof(
  { weight: 4, arbitrary: fc.oneof(v6, v4) },
  { weight: 1, arbitrary: junkItem },
);
/** Comma lists with odd spacing, sometimes with a duplicate in another spelling. */
const list = fc
  .tuple(
    fc.oneof(
      fc.array(item, { minLength: 1, maxLength: 2 }),
      fc.array(item, { minLength: 1, maxLength: 20 }),
    ),
    fc.array(fc.constantFrom('', ' ', '  ', '\t', '\n'), { minLength: 40, maxLength: 40 }),
    fc.boolean(),
  )
  .map(([items, pads, dup]) => {
    const all = dup && items[0] && isIP(items[0]) === 6 ? [...items, expand(items[0])] : items;
    return all.map((x, i) => `${pads[i % 40]}${x}${pads[(i + 7) % 40]}`).join(',');
  });
const text = fc.oneof(
  { weight: 3, arbitrary: list },
  { weight: 1, arbitrary: fc.string({ maxLength: 60, unit: 'binary' }) },
  { weight: 1, arbitrary: fc.constantFrom(undefined, '', '  ', ',', ' , ') },
);

function expand(ip: string): string {
  return ip.includes('%') ? ip : new Address6(ip).canonicalForm().toUpperCase();
}
/** The oracle's address test: node:net, no zone ID. */
const family = (s: string) => (s.includes('%') ? 0 : isIP(s));
/** The oracle's identity of an address: ip-address's canonical text. */
const identity = (s: string) =>
  family(s) === 4 ? `4/${new Address4(s).correctForm()}` : `6/${new Address6(s).correctForm()}`;

function expectRefusal(p: Parsed<unknown>, prefix: string) {
  expect(p.ok).toBe(false);
  if (!p.ok) {
    expect(p.error.startsWith(prefix)).toBe(true);
    expect(p.error.length).toBeGreaterThan(prefix.length + 10);
  }
}

describe('annotation parsers: fuzzed values', () => {
  it(
    `ip-algo: never throws, accepts exactly the names (${RUNS} cases)`,
    () => {
      const raw = fc.oneof(
        fc.constantFrom(...IpAlgo.options).map((a) => ` ${a}\n`),
        fc.constantFrom('Stable', 'random,stable', 'sequentia', 'stable stable'),
        fc.string({ maxLength: 20, unit: 'binary' }),
        fc.constant(undefined),
      );
      fc.assert(
        fc.property(raw, (r) => {
          const p = parseIpAlgo(r);
          const trimmed = r?.trim();
          if (!trimmed) {
            expect(p).toBeUndefined();
            return;
          }
          if ((IpAlgo.options as string[]).includes(trimmed)) {
            expect(p).toEqual({ ok: true, value: trimmed });
            return;
          }
          expect(p?.ok).toBe(false);
          if (p && !p.ok) expect(p.error).toContain(JSON.stringify(r));
        }),
        { numRuns: RUNS },
      );
    },
    TIMEOUT,
  );

  it(
    `pinned-ip: never throws; accepts one address per family; round-trips (${RUNS} cases)`,
    () => {
      let accepted = 0;
      fc.assert(
        fc.property(text, (raw) => {
          const p = parsePinnedIp(raw);
          if (p?.ok) accepted++;
          if (raw === undefined || raw.trim() === '') {
            expect(p).toBeUndefined();
            return;
          }
          const items = raw.split(',').map((s) => s.trim());
          const families = items.map(family);
          const valid =
            families.every((f) => f !== 0) &&
            families.filter((f) => f === 6).length <= 1 &&
            families.filter((f) => f === 4).length <= 1;
          if (!valid) {
            expectRefusal(p as Parsed<unknown>, 'pinned-ip: ');
            return;
          }
          expect(p).toEqual({
            ok: true,
            value: {
              ...(families.includes(6) ? { ipv6: items[families.indexOf(6)] } : {}),
              ...(families.includes(4) ? { ipv4: items[families.indexOf(4)] } : {}),
            },
          });
          // Its own text parses to the same value.
          if (p?.ok)
            expect(parsePinnedIp([p.value.ipv6, p.value.ipv4].filter(Boolean).join(','))).toEqual(
              p,
            );
        }),
        { numRuns: RUNS },
      );
      expect(accepted).toBeGreaterThan(RUNS / 20);
    },
    TIMEOUT,
  );

  it(
    `anycast: never throws; refuses non-addresses, duplicates and long lists; round-trips (${RUNS} cases)`,
    () => {
      let accepted = 0;
      fc.assert(
        fc.property(text, (raw) => {
          const p = parseAnycast(raw);
          if (p?.ok) accepted++;
          if (raw === undefined || raw.trim() === '') {
            expect(p).toBeUndefined();
            return;
          }
          const items = raw.split(',').map((s) => s.trim());
          const allAddresses = items.every((s) => family(s) !== 0);
          const ids = allAddresses ? items.map(identity) : [];
          const valid =
            allAddresses && items.length <= MAX_ANYCAST_PER_POD && new Set(ids).size === ids.length;
          if (!valid) {
            expectRefusal(p as Parsed<unknown>, 'anycast: ');
            return;
          }
          expect(p).toEqual({ ok: true, value: items });
          if (p?.ok) expect(parseAnycast(p.value.join(', '))).toEqual(p);
        }),
        { numRuns: RUNS },
      );
      expect(accepted).toBeGreaterThan(RUNS / 20);
    },
    TIMEOUT,
  );
});
