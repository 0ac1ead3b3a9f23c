// Released addresses: how long they are held back, and their restore after an agent restart.
import { describe, expect, it } from 'vitest';
import { DEFAULT_ADDRESS_QUARANTINE_MS } from './allocation.js';
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
    });
  });
});
