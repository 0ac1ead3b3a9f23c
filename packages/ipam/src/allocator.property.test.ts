// Model-based properties of the allocator: whatever the sequence of allocations, releases
// and clock steps, no address is handed to a second pod while held or quarantined, every
// address is a usable one of its prefix, and released addresses come back after quarantine.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { formatAddress, parseAddress } from './address.js';
import type { AllocationResult } from './allocation.js';
import { AddressAllocator } from './allocator.js';
import { parsePrefix, prefixContainsAddress, type Prefix } from './prefix.js';
import { isReservedOffset, reservedOffsets } from './reserved.js';

const QUARANTINE = 1000;
const CIDR6 = '2001:db8::/120'; // 127 usable: collisions and exhaustion happen
const CIDR4 = '192.0.2.0/28'; // 14 usable

const prefixOf = (text: string): Prefix => {
  const parsed = parsePrefix(text);
  if (!parsed.ok) throw new Error(parsed.error);
  return parsed.value;
};

/** Small deterministic generator (mulberry32) so a failing case replays from its seed. */
function seededBytes(seed: number) {
  let state = seed >>> 0;
  const next = () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) & 0xff;
  };
  return (count: number) => Uint8Array.from({ length: count }, next);
}

type Op =
  | { kind: 'allocate'; name: number; algo: 'random' | 'sequential' | 'stable'; ns?: number }
  | { kind: 'release'; pick: number }
  | { kind: 'wait'; ms: number };

const op: fc.Arbitrary<Op> = fc.oneof(
  {
    weight: 5,
    arbitrary: fc.record({
      kind: fc.constant('allocate' as const),
      name: fc.integer({ min: 0, max: 40 }),
      algo: fc.constantFrom('random' as const, 'sequential' as const, 'stable' as const),
      ns: fc.integer({ min: 0, max: 2 }),
    }),
  },
  { weight: 3, arbitrary: fc.record({ kind: fc.constant('release' as const), pick: fc.nat() }) },
  {
    weight: 1,
    arbitrary: fc.record({
      kind: fc.constant('wait' as const),
      ms: fc.integer({ min: 1, max: 1500 }),
    }),
  },
);

describe('allocator properties', () => {
  const prefix6 = prefixOf(CIDR6);
  const prefix4 = prefixOf(CIDR4);

  it('never hands an address to another pod while it is allocated or quarantined', () => {
    fc.assert(
      fc.property(
        fc.integer(),
        fc.array(op, { minLength: 20, maxLength: 300, size: 'max' }),
        (seed, ops) => {
          const clock = { now: 0 };
          const created = AddressAllocator.create({
            cidr6: CIDR6,
            cidr4: CIDR4,
            quarantineMs: QUARANTINE,
            now: () => clock.now,
            randomBytes: seededBytes(seed),
          });
          if (!created.ok) throw new Error(created.error);
          const alloc = created.value;
          // The model: who holds each address, and who released it until when. A namespace
          // keeps at most a quarter of a prefix quarantined (IPv6 /120: 31, IPv4 /28: 3); past
          // that its oldest quarantine ends.
          const held = new Map<string, string>(); // ip -> identity
          const quarantined = new Map<string, { identity: string; until: number; seq: number }>();
          const bound = (ip: string) => (ip.includes(':') ? 31 : 3);
          const order = new Map<string, { ip: string; seq: number }[]>(); // ns+family -> releases
          let seq = 0;
          const released = new Set<string>();
          const live = ({ ip, seq }: { ip: string; seq: number }) => {
            const q = quarantined.get(ip);
            return q !== undefined && q.seq === seq && q.until > clock.now;
          };
          const quarantine = (ip: string, identity: string) => {
            const key = `${identity.split('/')[0]} ${ip.includes(':')}`;
            const list = order.get(key) ?? [];
            order.set(key, list);
            quarantined.set(ip, { identity, until: clock.now + QUARANTINE, seq: ++seq });
            list.push({ ip, seq });
            while (list.filter(live).length > bound(ip)) {
              const oldest = list.shift()!;
              if (live(oldest)) quarantined.delete(oldest.ip);
            }
          };
          const owners = new Map<string, { identity: string; ips: string[] }>();
          let counter = 0;

          const check = (result: AllocationResult, identity: string) => {
            if (!result.ok) {
              expect(result.error.code).toBe('Exhausted');
              const counts = alloc.counts();
              const family = result.error.family === 4 ? counts.ipv4 : counts.ipv6;
              expect(family?.free).toBe(0n);
              return;
            }
            const { ip6, ip4, owner } = result.value;
            for (const [ip, prefix] of [
              [ip6, prefix6],
              [ip4, prefix4],
            ] as const) {
              const address = parseAddress(ip as string);
              expect(address && prefixContainsAddress(prefix, address)).toBe(true);
              expect(
                isReservedOffset(reservedOffsets(prefix), address!.value - prefix.network),
              ).toBe(false);
              expect(held.has(ip as string)).toBe(false);
              const q = quarantined.get(ip as string);
              // Only the same pod (a stable name coming back) may take a quarantined address.
              if (q && q.until > clock.now) expect(q.identity).toBe(identity);
              held.set(ip as string, identity);
              quarantined.delete(ip as string);
            }
            owners.set(owner, { identity, ips: [ip6, ip4 as string] });
          };

          for (const o of ops) {
            if (o.kind === 'allocate') {
              const name = o.algo === 'stable' ? `web-${o.name}` : `pod-${counter}`;
              const owner = `c${counter++}`;
              const namespace = `ns${o.ns ?? 0}`;
              check(
                alloc.allocate({ owner, namespace, name, algo: o.algo }),
                `${namespace}/${name}`,
              );
            } else if (o.kind === 'release') {
              const list = [...owners.keys()];
              const owner = list[o.pick % Math.max(list.length, 1)];
              if (owner === undefined) continue;
              const entry = owners.get(owner)!;
              expect(alloc.release(owner)?.ip6).toBe(entry.ips[0]);
              owners.delete(owner);
              for (const ip of entry.ips) {
                held.delete(ip);
                quarantine(ip, entry.identity);
              }
              // The allocator agrees on every address ever released: quarantined or not.
              for (const ip of entry.ips) released.add(ip);
              for (const ip of released) {
                const q = quarantined.get(ip);
                expect(alloc.isQuarantined(ip), ip).toBe(q !== undefined && q.until > clock.now);
              }
            } else {
              clock.now += o.ms;
            }
          }
        },
      ),
      { numRuns: 200 },
    );
  });

  it('hands out every released address again once quarantine is over', () => {
    fc.assert(
      fc.property(
        fc.integer(),
        fc.constantFrom('random' as const, 'sequential' as const, 'stable' as const),
        (seed, algo) => {
          const clock = { now: 0 };
          const created = AddressAllocator.create({
            cidr6: CIDR6,
            cidr4: CIDR4,
            quarantineMs: QUARANTINE,
            quarantineShare: 1, // the whole slice quarantined at once: no early end here
            now: () => clock.now,
            randomBytes: seededBytes(seed),
          });
          if (!created.ok) throw new Error(created.error);
          const alloc = created.value;
          const fill = (round: number) => {
            const got: string[] = [];
            for (let i = 0; ; i++) {
              const r = alloc.allocate({
                owner: `${round}-${i}`,
                namespace: 'ns',
                name: `p${round}-${i}`,
                algo,
              });
              if (!r.ok) return got;
              got.push(r.value.ip4 as string);
            }
          };
          const first = fill(0);
          expect(first).toHaveLength(14); // the IPv4 slice is the smaller one
          for (const a of alloc.allocations()) alloc.release(a.owner);
          expect(fill(1)).toHaveLength(0); // all quarantined
          clock.now += QUARANTINE;
          expect(new Set(fill(2))).toEqual(new Set(first));
        },
      ),
      { numRuns: 30 },
    );
  });

  it('sequential always hands out the lowest free address', () => {
    fc.assert(
      fc.property(fc.array(op, { minLength: 20, maxLength: 200, size: 'max' }), (ops) => {
        const clock = { now: 0 };
        const created = AddressAllocator.create({
          cidr6: CIDR6,
          cidr4: CIDR4,
          quarantineMs: QUARANTINE,
          quarantineShare: 1, // this model has no early end of quarantine
          now: () => clock.now,
        });
        if (!created.ok) throw new Error(created.error);
        const alloc = created.value;
        const unavailable = new Map<string, number>(); // ip -> quarantined until (Infinity while held)
        const owners: string[] = [];
        const lowestFree = (prefix: Prefix) => {
          const reserved = reservedOffsets(prefix);
          for (let o = 0n; o < reserved.size; o++) {
            const ip = formatAddress(prefix.family, prefix.network + o);
            if (!isReservedOffset(reserved, o) && !((unavailable.get(ip) ?? 0) > clock.now))
              return ip;
          }
          return undefined;
        };
        let counter = 0;
        for (const o of ops) {
          if (o.kind === 'allocate') {
            const expected = [lowestFree(prefix6), lowestFree(prefix4)];
            const result = alloc.allocate({
              owner: `c${counter}`,
              namespace: 'ns',
              name: `p${counter++}`,
              algo: 'sequential',
            });
            if (!result.ok) {
              expect(expected).toContain(undefined);
              continue;
            }
            expect([result.value.ip6, result.value.ip4]).toEqual(expected);
            for (const ip of expected) unavailable.set(ip as string, Infinity);
            owners.push(result.value.owner);
          } else if (o.kind === 'release') {
            const [owner] = owners.splice(o.pick % Math.max(owners.length, 1), 1);
            const released = owner === undefined ? undefined : alloc.release(owner);
            for (const ip of [released?.ip6, released?.ip4])
              if (ip) unavailable.set(ip, clock.now + QUARANTINE);
          } else {
            clock.now += o.ms;
          }
        }
      }),
      { numRuns: 100 },
    );
  });
});
