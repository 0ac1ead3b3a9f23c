// Released addresses: how long they are held back, and their restore after an agent restart.
import { describe, expect, it, vi } from 'vitest';
import { DEFAULT_ADDRESS_QUARANTINE_MS } from './allocation.js';
import { AddressAllocator } from './allocator.js';
import { steadyNow } from './clock.js';
import { stableOffset } from './interface-id.js';
import { bytesOf, ok, req, setup } from '../testing/allocator-fixtures.js';

describe('quarantine', () => {
  it('holds a released address for 5 minutes by default, or as configured', () => {
    const { alloc, clock } = setup();
    const ip6 = ok(alloc.allocate(req('a'))).ip6;
    alloc.release('a');
    clock.now += DEFAULT_ADDRESS_QUARANTINE_MS - 1;
    expect(alloc.isQuarantined(ip6)).toBe(true);
    clock.now += 1;
    expect(alloc.isQuarantined(ip6)).toBe(false);
    expect(DEFAULT_ADDRESS_QUARANTINE_MS).toBe(300_000);

    const short = setup({ quarantineMs: 10 });
    const ip = ok(short.alloc.allocate(req('a'))).ip6;
    short.alloc.release('a');
    short.clock.now += 10;
    expect(short.alloc.isQuarantined(ip)).toBe(false);
  });

  it('restores a quarantine after a restart: kept off for the rest of its time, the same pod may take it back', () => {
    const { alloc, clock } = setup();
    const seq = (owner: string, name = `pod-${owner}`) =>
      ok(alloc.allocate(req(owner, { algo: 'sequential', name }))).ip6;
    const until = clock.now + 1_000;
    const iso = (ms: number) => new Date(ms).toISOString();
    const released = (ip: string, at = until) => ({
      ip,
      until: iso(at),
      identity: 'default/web-0',
      pinned: false,
    });
    expect(alloc.restoreReleased(released('2001:db8:0:1::1'))).toBe(true);
    expect(alloc.restoreReleased(released('2001:db8:0:1::2', clock.now))).toBe(false);
    expect(alloc.restoreReleased(released('2001:db8:99::1'))).toBe(false); // not this node's
    expect(alloc.isQuarantined('2001:db8:0:1::1')).toBe(true);
    expect(alloc.counts().ipv6.quarantined).toBe(1);
    expect(seq('a')).toBe('2001:db8:0:1::2');
    // Held addresses are never put back into quarantine; a shorter quarantine changes nothing.
    expect(alloc.restoreReleased(released('2001:db8:0:1::2'))).toBe(false);
    expect(alloc.restoreReleased(released('2001:db8:0:1::1', until - 1))).toBe(false);
    clock.now = until;
    expect(seq('b')).toBe('2001:db8:0:1::1');
  });

  it('a restored quarantine lasts at most one quarantine from now (a time written under a clock far ahead)', () => {
    const { alloc, clock } = setup();
    const until = new Date(clock.now + 30 * 24 * 3600_000).toISOString(); // a month ahead
    expect(
      alloc.restoreReleased({ ip: '192.0.2.17', until, identity: 'default/a', pinned: false }),
    ).toBe(true);
    clock.now += DEFAULT_ADDRESS_QUARANTINE_MS - 1;
    expect(alloc.isQuarantined('192.0.2.17')).toBe(true);
    clock.now += 1;
    expect(alloc.isQuarantined('192.0.2.17')).toBe(false);
  });

  it('by default quarantine runs on a steady clock: a step of the wall clock moves nothing', () => {
    vi.useFakeTimers({ toFake: ['Date'] });
    try {
      const created = AddressAllocator.create({ cidr6: '2001:db8:0:1::/64', quarantineMs: 60_000 });
      if (!created.ok) throw new Error(created.error);
      const alloc = created.value;
      const ip6 = ok(alloc.allocate(req('a'))).ip6;
      alloc.release('a');
      vi.setSystemTime(Date.now() + 24 * 3600_000); // NTP steps the clock a day forward
      expect(alloc.isQuarantined(ip6)).toBe(true);
      vi.setSystemTime(Date.now() - 48 * 3600_000); // and back
      expect(steadyNow()).toBeGreaterThan(0);
      expect(alloc.isQuarantined(ip6)).toBe(true);
    } finally {
      vi.useRealTimers();
    }
  });

  it('a restored stable address goes back to the pod that released it, not to another', () => {
    const { alloc } = setup({ randomBytes: bytesOf(stableOffset(64, 'default', 'web-0')) });
    const probe = setup();
    const ip6 = ok(probe.alloc.allocate(req('x', { algo: 'stable', name: 'web-0' }))).ip6;
    const until = new Date(Date.parse('2100-01-01T00:00:00Z')).toISOString();
    expect(
      alloc.restoreReleased({ ip: ip6, until, identity: 'default/web-0', pinned: false }),
    ).toBe(true);
    expect(ok(alloc.allocate(req('b'))).ip6).not.toBe(ip6);
    expect(ok(alloc.allocate(req('c', { algo: 'stable', name: 'web-0' }))).ip6).toBe(ip6);
  });

  it('counts quarantined addresses apart from allocated ones', () => {
    const { alloc } = setup();
    ok(alloc.allocate(req('a')));
    ok(alloc.allocate(req('b')));
    alloc.release('a');
    expect(alloc.counts().ipv4).toEqual({
      prefix: '192.0.2.16/28',
      usable: 14n,
      allocated: 1,
      quarantined: 1,
      free: 12n,
      quarantineCut: 0,
    });
  });

  it('an address no pod ever used is free at once, not quarantined', () => {
    const { alloc } = setup();
    const a = ok(alloc.allocate(req('a', { algo: 'sequential' })));
    alloc.release('a', { used: false });
    expect(alloc.isQuarantined(a.ip6)).toBe(false);
    expect(alloc.isQuarantined(a.ip4!)).toBe(false);
    expect(alloc.counts().ipv4).toMatchObject({ allocated: 0, quarantined: 0, free: 14n });
    expect(ok(alloc.allocate(req('b', { algo: 'sequential' }))).ip4).toBe(a.ip4);
  });

  it('a namespace churning pods through the node keeps at most its share quarantined; the others still get addresses', () => {
    const { alloc } = setup(); // IPv4 /28: 14 usable, a share of 0.25 → 3 per namespace
    const churn = (i: number) => req(`c${i}`, { namespace: 'churn', name: `job-${i}` });
    const released: string[] = [];
    for (let i = 0; i < 40; i++) {
      released.push(ok(alloc.allocate(churn(i))).ip4!);
      alloc.release(`c${i}`);
    }
    const ipv4 = alloc.counts().ipv4!;
    expect(ipv4.quarantined).toBe(3);
    expect(ipv4.quarantineCut).toBe(37);
    // The latest releases are the ones still quarantined; the oldest were cut first.
    expect(released.slice(-3).every((ip) => alloc.isQuarantined(ip))).toBe(true);
    expect(alloc.isQuarantined(released[0]!)).toBe(false);
    // Another namespace fills the rest of the slice: 11 addresses, none of them waits.
    for (let i = 0; i < 11; i++)
      ok(alloc.allocate(req(`o${i}`, { namespace: 'other', name: `web-${i}` })));
    expect(alloc.counts().ipv4).toMatchObject({ allocated: 11, quarantined: 3, free: 0n });
    // Each namespace has its own share: 'other' releasing does not cut 'churn's quarantine.
    alloc.release('o0');
    expect(alloc.counts().ipv4).toMatchObject({ quarantined: 4, quarantineCut: 37 });
  });

  it('quarantineShare 1 bounds nothing (a churning namespace exhausts the slice); out of range is refused', () => {
    const { alloc } = setup({ quarantineShare: 1 });
    for (let i = 0; i < 14; i++) {
      ok(alloc.allocate(req(`c${i}`, { namespace: 'churn' })));
      alloc.release(`c${i}`);
    }
    const other = alloc.allocate(req('o', { namespace: 'other' }));
    expect(other.ok || other.error.code).toBe('Exhausted');
    for (const quarantineShare of [0, -1, 1.5, Number.NaN])
      expect(() => setup({ quarantineShare })).toThrow(/quarantineShare must be in \(0, 1\]/);
  });
});
