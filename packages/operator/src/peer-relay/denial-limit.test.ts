import { describe, expect, it } from 'vitest';
import { DenialLimit, denialSource } from './denial-limit.js';

describe('DenialLimit', () => {
  it('refuses an address once it caused maxDenials denials, until its window ends', () => {
    let now = 0;
    const limit = new DenialLimit({ maxDenials: 3, windowMs: 1_000, now: () => now });
    for (let i = 0; i < 2; i++) limit.denied('2001:db8::66');
    expect(limit.limited('2001:db8::66')).toBe(false);
    limit.denied('2001:db8::66');
    expect(limit.limited('2001:db8::66')).toBe(true);
    // Another address is not held back by it.
    expect(limit.limited('2001:db8::1')).toBe(false);
    now = 999;
    expect(limit.limited('2001:db8::66')).toBe(true);
    now = 1_000;
    expect(limit.limited('2001:db8::66')).toBe(false);
    expect(limit.size).toBe(0);
  });

  it('remembers at most maxSources addresses, forgetting the oldest', () => {
    const limit = new DenialLimit({ maxDenials: 1, maxSources: 2 });
    limit.denied('a');
    limit.denied('b');
    limit.denied('c');
    expect(limit.size).toBe(2);
    expect(limit.limited('a')).toBe(false);
    expect(limit.limited('b')).toBe(true);
    expect(limit.limited('c')).toBe(true);
  });
});

describe('denialSource', () => {
  it('counts IPv6 by its /64, IPv4 (mapped or not) by its address', () => {
    expect(denialSource('2001:db8:0:7::66')).toBe('2001:db8:0:7::/64');
    expect(denialSource('2001:db8:0:7:ffff::1')).toBe(denialSource('2001:db8:0:7::66'));
    expect(denialSource('2001:db8:0:8::66')).not.toBe(denialSource('2001:db8:0:7::66'));
    expect(denialSource('192.0.2.7')).toBe('192.0.2.7');
    expect(denialSource('::ffff:192.0.2.7')).toBe('192.0.2.7');
    expect(denialSource('::ffff:c000:207')).toBe('192.0.2.7');
    expect(denialSource('')).toBe('');
  });
});
