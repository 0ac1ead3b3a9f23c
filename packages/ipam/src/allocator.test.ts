import { describe, expect, it } from 'vitest';
import {
  DEFAULT_ADDRESS_QUARANTINE_MS,
  type AllocationResult,
  type AllocatorOptions,
} from './allocation.js';
import { AddressAllocator } from './allocator.js';
import { stableOffset } from './interface-id.js';
import { bytesOf, ok, req, setup } from '../testing/allocator-fixtures.js';

describe('random (the default)', () => {
  it('starts at the random interface ID and returns canonical text', () => {
    const { alloc } = setup({ randomBytes: bytesOf(0x00ab_0000_0000_0010n) });
    expect(ok(alloc.allocate(req('c1')))).toEqual({
      owner: 'c1',
      namespace: 'default',
      name: 'pod-c1',
      ip6: '2001:db8:0:1:ab::10',
      ip4: '192.0.2.17',
      pinned: false,
    });
  });

  it('takes the next candidate on a collision', () => {
    const { alloc } = setup();
    expect(ok(alloc.allocate(req('a'))).ip6).toBe('2001:db8:0:1::1234');
    expect(ok(alloc.allocate(req('b'))).ip6).toBe('2001:db8:0:1::1235');
  });

  it('never hands out the subnet-router anycast or an RFC 5453 interface ID', () => {
    const cases: [bigint, string][] = [
      [0n, '2001:db8:0:1::1'],
      [0x0200_5eff_fe00_5213n, '2001:db8:0:1:200:5eff:ff00:0'],
      [0xfdff_ffff_ffff_ff80n, '2001:db8:0:1:fe00::'],
    ];
    for (const [start, expected] of cases) {
      const { alloc } = setup({ randomBytes: bytesOf(start) });
      expect(ok(alloc.allocate(req('a'))).ip6).toBe(expected);
    }
  });

  it('wraps from the top of the prefix to the bottom', () => {
    const { alloc } = setup({ randomBytes: bytesOf((1n << 64n) - 1n) });
    expect(ok(alloc.allocate(req('a'))).ip6).toBe('2001:db8:0:1:ffff:ffff:ffff:ffff');
    expect(ok(alloc.allocate(req('b'))).ip6).toBe('2001:db8:0:1::1');
  });

  it('uses crypto randomness when no source is injected', () => {
    const created = AddressAllocator.create({ cidr6: '2001:db8::/64' });
    if (!created.ok) throw new Error(created.error);
    const a = ok(created.value.allocate(req('a'))).ip6;
    const b = ok(created.value.allocate(req('b'))).ip6;
    expect(a).not.toBe(b);
    expect(a.startsWith('2001:db8::')).toBe(true);
  });
});

describe('sequential', () => {
  it('hands out the lowest free address and reuses a released one only after quarantine', () => {
    const { alloc, clock } = setup();
    const seq = (owner: string) => ok(alloc.allocate(req(owner, { algo: 'sequential' }))).ip6;
    expect([seq('a'), seq('b'), seq('c')]).toEqual([
      '2001:db8:0:1::1',
      '2001:db8:0:1::2',
      '2001:db8:0:1::3',
    ]);
    alloc.release('b');
    expect(seq('d')).toBe('2001:db8:0:1::4');
    clock.now += DEFAULT_ADDRESS_QUARANTINE_MS;
    expect(seq('e')).toBe('2001:db8:0:1::2');
    expect(seq('f')).toBe('2001:db8:0:1::5');
  });
});

describe('stable', () => {
  it('derives the address from namespace/name', () => {
    const { alloc } = setup();
    const ip6 = ok(alloc.allocate(req('a', { algo: 'stable', name: 'web-0' }))).ip6;
    // 0x53842afe623a6f1e: the first 64 bits of SHA-256("default/web-0").
    expect(ip6).toBe('2001:db8:0:1:5384:2afe:623a:6f1e');
  });

  it('gives a recreated pod its address back, even while it is quarantined', () => {
    const { alloc, clock } = setup();
    const first = ok(alloc.allocate(req('a', { algo: 'stable', name: 'web-0' })));
    alloc.release('a');
    const again = ok(alloc.allocate(req('b', { algo: 'stable', name: 'web-0' })));
    expect([again.ip6, again.ip4]).toEqual([first.ip6, first.ip4]);
    alloc.release('b');
    clock.now += DEFAULT_ADDRESS_QUARANTINE_MS;
    expect(ok(alloc.allocate(req('c', { algo: 'stable', name: 'web-0' }))).ip6).toBe(first.ip6);
  });

  it('leaves a reclaimed address quarantined when the rest of the allocation fails', () => {
    const { alloc } = setup();
    const first = ok(alloc.allocate(req('a', { algo: 'stable', name: 'web-0' })));
    alloc.release('a');
    const failed = alloc.allocate(
      req('b', { algo: 'stable', name: 'web-0', pinned: { ipv4: '203.0.113.1' } }),
    );
    expect(failed.ok || failed.error.code).toBe('PinnedOutsideRanges');
    expect(alloc.isQuarantined(first.ip6)).toBe(true);
    expect(alloc.ownerOf(first.ip6)).toBeUndefined();
  });

  it('keeps another pod off a quarantined stable address', () => {
    const { alloc } = setup({ randomBytes: bytesOf(stableOffset(64, 'default', 'web-0')) });
    const first = ok(alloc.allocate(req('a', { algo: 'stable', name: 'web-0' })));
    alloc.release('a');
    // A random pod starting right at that address must step past it.
    expect(ok(alloc.allocate(req('b'))).ip6).not.toBe(first.ip6);
  });

  it('takes a deterministic next candidate when two names hash to the same address', () => {
    // In a /120 only 8 bits vary: find two names with the same start.
    const byStart = new Map<bigint, string>();
    let pair: [string, string] | undefined;
    for (let i = 0; !pair; i++) {
      const name = `web-${i}`;
      const start = stableOffset(8, 'default', name);
      if (start < 1n || start > 126n) continue; // keep the example out of the reserved ranges
      const other = byStart.get(start);
      if (other) pair = [other, name];
      byStart.set(start, name);
    }
    const run = () => {
      const { alloc } = setup({ cidr6: '2001:db8::/120' });
      return pair.map((name, i) => ok(alloc.allocate(req(`c${i}`, { algo: 'stable', name }))).ip6);
    };
    const [a, b] = run();
    const start = stableOffset(8, 'default', pair[0]);
    expect(a).toBe(`2001:db8::${start.toString(16)}`);
    expect(b).toBe(`2001:db8::${(start + 1n).toString(16)}`);
    expect(run()).toEqual([a, b]);
  });
});

describe('an unknown algorithm', () => {
  it('is refused before anything is taken (never treated as sequential)', () => {
    const { alloc } = setup();
    expect(() => alloc.allocate(req('a', { algo: 'lowest' as never }))).toThrow(
      /unknown ip-algo "lowest"/,
    );
    expect(alloc.counts()).toMatchObject({ owners: 0, ipv6: { allocated: 0 } });
  });
});

describe('IPv4', () => {
  it('never uses the first or last address of the slice and reports exhaustion clearly', () => {
    const { alloc, clock } = setup({ cidr4: '192.0.2.8/29' });
    const got = [1, 2, 3, 4, 5, 6].map((i) => ok(alloc.allocate(req(`c${i}`))).ip4);
    expect(got).toEqual([
      '192.0.2.9',
      '192.0.2.10',
      '192.0.2.11',
      '192.0.2.12',
      '192.0.2.13',
      '192.0.2.14',
    ]);
    const full = alloc.allocate(req('c7'));
    expect(full.ok).toBe(false);
    if (full.ok) return;
    expect(full.error).toMatchObject({ code: 'Exhausted', family: 4 });
    expect(full.error.message).toBe(
      'IPv4 slice 192.0.2.8/29 is exhausted: 6 usable addresses, 6 allocated, 0 quarantined (released addresses become free after 300 s)',
    );
    // The IPv6 address taken for the failed request was given back.
    expect(alloc.counts().ipv6.allocated).toBe(6);
    alloc.release('c3');
    expect(alloc.allocate(req('c8')).ok).toBe(false);
    clock.now += DEFAULT_ADDRESS_QUARANTINE_MS;
    expect(ok(alloc.allocate(req('c8'))).ip4).toBe('192.0.2.11');
  });

  it('is absent when the node has no IPv4 slice', () => {
    const { alloc } = setup({ cidr4: undefined });
    expect(ok(alloc.allocate(req('a'))).ip4).toBeUndefined();
    expect(alloc.counts().ipv4).toBeUndefined();
  });

  it('is left out for an IPv6-only request, which a full slice never stops', () => {
    const { alloc } = setup({ cidr4: '192.0.2.8/30', pinnedCIDRs: ['198.51.100.0/28'] });
    expect(ok(alloc.allocate(req('v4'))).ip4).toBe('192.0.2.9');
    expect(ok(alloc.allocate(req('v4b'))).ip4).toBe('192.0.2.10');
    expect(alloc.allocate(req('v4c')).ok).toBe(false);
    const only6 = Array.from({ length: 20 }, (_, i) =>
      ok(alloc.allocate({ ...req(`v6-${i}`), ipv4: false })),
    );
    expect(only6.every((a) => a.ip4 === undefined)).toBe(true);
    expect(alloc.counts().ipv4?.allocated).toBe(2);
    // A pinned IPv4 address is taken even so: the pod asked for that address by name.
    const pinned = ok(
      alloc.allocate({ ...req('pin'), ipv4: false, pinned: { ipv4: '198.51.100.5' } }),
    );
    expect(pinned.ip4).toBe('198.51.100.5');
  });
});

describe('IPv6 exhaustion', () => {
  it('names the prefix and its counts', () => {
    const { alloc } = setup({ cidr6: '2001:db8::/120', cidr4: undefined });
    for (let i = 0; i < 127; i++) ok(alloc.allocate(req(`c${i}`)));
    const result = alloc.allocate(req('last'));
    expect(result.ok || result.error.message).toMatch(
      /^IPv6 prefix 2001:db8::\/120 is exhausted: 127 usable/,
    );
  });
});

describe('pinned addresses', () => {
  const pinnedCIDRs = ['2001:db8:ff::/64', '198.51.100.0/24'];

  it('accepts an address inside the pinned ranges, in canonical form', () => {
    const { alloc } = setup({ pinnedCIDRs });
    const got = ok(
      alloc.allocate(req('a', { pinned: { ipv6: '2001:DB8:FF:0::7', ipv4: '198.51.100.7' } })),
    );
    expect(got).toMatchObject({ ip6: '2001:db8:ff::7', ip4: '198.51.100.7', pinned: true });
    expect(alloc.counts()).toMatchObject({
      pinned: 1,
      ipv6: { allocated: 0 },
      ipv4: { allocated: 0 },
    });
  });

  it('pins one family and allocates the other', () => {
    const { alloc } = setup({ pinnedCIDRs });
    expect(ok(alloc.allocate(req('a', { pinned: { ipv4: '198.51.100.7' } })))).toMatchObject({
      ip6: '2001:db8:0:1::1234',
      ip4: '198.51.100.7',
      pinned: true,
    });
  });

  it('refuses addresses outside the pinned ranges, reserved ones, and ones in use', () => {
    const { alloc } = setup({ pinnedCIDRs });
    const code = (r: AllocationResult) => (r.ok ? 'ok' : r.error.code);
    expect(code(alloc.allocate(req('a', { pinned: { ipv6: '2001:db8:fe::1' } })))).toBe(
      'PinnedOutsideRanges',
    );
    expect(code(alloc.allocate(req('a', { pinned: { ipv6: '2001:db8:ff::' } })))).toBe(
      'PinnedReserved',
    );
    expect(code(alloc.allocate(req('a', { pinned: { ipv6: '2001:db8:ff::1' } })))).toBe('ok');
    const clash = alloc.allocate(req('b', { pinned: { ipv6: '2001:db8:ff::1' } }));
    expect(clash.ok || clash.error).toMatchObject({
      code: 'PinnedInUse',
      message: 'pinned address 2001:db8:ff::1 is in use by default/pod-a (a)',
    });
    expect(code(alloc.allocate(req('c', { pinned: { ipv6: '198.51.100.1' } })))).toBe(
      'InvalidAddress',
    );
    // A failed IPv4 pin gives the IPv6 address back.
    expect(
      code(alloc.allocate(req('d', { pinned: { ipv6: '2001:db8:ff::2', ipv4: '203.0.113.1' } }))),
    ).toBe('PinnedOutsideRanges');
    expect(alloc.ownerOf('2001:db8:ff::2')).toBeUndefined();
  });

  it('says when the pool has no pinned range of the family', () => {
    const { alloc } = setup();
    const r = alloc.allocate(req('a', { pinned: { ipv6: '2001:db8:ff::1' } }));
    expect(r.ok || r.error.message).toBe(
      'pinned address 2001:db8:ff::1 is outside any pinned range (the pool has no IPv6 pinned range)',
    );
  });

  it('lets a released pin be pinned again at once, but not an address another pod released', () => {
    const { alloc } = setup({ pinnedCIDRs: ['2001:db8:0:1::/64'], randomBytes: bytesOf(5n) });
    ok(alloc.allocate(req('a', { pinned: { ipv6: '2001:db8:0:1::9' } })));
    alloc.release('a');
    expect(
      alloc.allocate(req('b', { name: 'other', pinned: { ipv6: '2001:db8:0:1::9' } })).ok,
    ).toBe(true);

    const random = ok(alloc.allocate(req('c'))).ip6; // ::5, by the random start
    alloc.release('c');
    const r = alloc.allocate(req('d', { name: 'thief', pinned: { ipv6: random } }));
    expect(r.ok || r.error.code).toBe('PinnedQuarantined');
    expect(alloc.allocate(req('e', { name: 'pod-c', pinned: { ipv6: random } })).ok).toBe(true);
  });
});

describe('markAllocated and ownership', () => {
  it('re-marks committed addresses so that nothing else gets them', () => {
    const { alloc } = setup({ pinnedCIDRs: ['2001:db8:ff::/64'] });
    const marked = alloc.markAllocated({
      owner: 'old',
      namespace: 'default',
      name: 'old',
      ip6: '2001:DB8:0:1:0::1234',
      ip4: '192.0.2.17',
      pinned: false,
    });
    expect(ok(marked)).toMatchObject({ ip6: '2001:db8:0:1::1234', ip4: '192.0.2.17' });
    expect(ok(alloc.allocate(req('new')))).toMatchObject({
      ip6: '2001:db8:0:1::1235',
      ip4: '192.0.2.18',
    });
    expect(alloc.ownerOf('2001:db8:0:1::1234')).toBe('old');
    // Idempotent, whatever the spelling of the same addresses.
    expect(
      ok(alloc.markAllocated({ ...ok(marked), ip6: '2001:db8:0:1:0:0:0:1234' })),
    ).toMatchObject({ owner: 'old' });
    const pinned = {
      owner: 'p',
      namespace: 'default',
      name: 'p',
      ip6: '2001:db8:ff::5',
      pinned: true,
    };
    expect(alloc.markAllocated(pinned).ok).toBe(true);
  });

  it('refuses conflicts, reserved addresses and addresses outside every range', () => {
    const { alloc } = setup();
    const base = { namespace: 'default', name: 'x', pinned: false };
    ok(alloc.markAllocated({ ...base, owner: 'a', ip6: '2001:db8:0:1::5' }));
    const code = (r: AllocationResult) => (r.ok ? 'ok' : r.error.code);
    expect(code(alloc.markAllocated({ ...base, owner: 'b', ip6: '2001:db8:0:1::5' }))).toBe(
      'Conflict',
    );
    expect(code(alloc.markAllocated({ ...base, owner: 'a', ip6: '2001:db8:0:1::6' }))).toBe(
      'Conflict',
    );
    expect(code(alloc.markAllocated({ ...base, owner: 'c', ip6: '2001:db8:0:1::' }))).toBe(
      'OutOfRange',
    );
    expect(code(alloc.markAllocated({ ...base, owner: 'c', ip6: '2001:db8:0:2::1' }))).toBe(
      'OutOfRange',
    );
    expect(
      code(alloc.markAllocated({ ...base, owner: 'c', ip6: '2001:db8:0:1::7', ip4: '192.0.2.31' })),
    ).toBe('OutOfRange');
    expect(code(alloc.markAllocated({ ...base, owner: 'c', ip6: '192.0.2.17' }))).toBe(
      'InvalidAddress',
    );
    // Nothing of the refused entries was kept.
    expect(alloc.ownerOf('2001:db8:0:1::7')).toBeUndefined();
  });

  it('gives the same owner the same addresses when it asks again', () => {
    const { alloc } = setup();
    const first = ok(alloc.allocate(req('a')));
    expect(ok(alloc.allocate(req('a', { algo: 'sequential' })))).toEqual(first);
    expect(alloc.get('a')).toEqual(first);
    expect(alloc.allocations()).toEqual([first]);
    expect(alloc.release('a')).toEqual(first);
    expect(alloc.release('a')).toBeUndefined();
  });
});

describe('AddressAllocator.create', () => {
  it('refuses prefixes it cannot allocate from', () => {
    const bad: AllocatorOptions[] = [
      { cidr6: '2001:db8::/124' },
      { cidr6: '192.0.2.0/24' },
      { cidr6: '2001:db8::/64', cidr4: '192.0.2.0/31' },
      { cidr6: '2001:db8::/64', pinnedCIDRs: ['nope'] },
      { cidr6: '2001:db8::/64', quarantineMs: -1 },
    ];
    for (const options of bad)
      expect(AddressAllocator.create(options).ok, JSON.stringify(options)).toBe(false);
  });
});
