import { describe, expect, it } from 'vitest';
import { claimsFor, entry, pod } from '../../testing/routing-fixtures.js';
import { usableSources } from './ownership.js';

const PINNED = ['2001:db8:200::/64', '198.51.100.0/24'];

describe('usable source addresses', () => {
  const pinned = entry('web', { ip6: '2001:db8:200::7', ip4: '192.0.2.18', pinned: true });
  const member = entry('dns', { ip6: '2001:db8:100::5', anycast: ['2001:db8:300::1'] });

  it('are all of them while the pod holds its claims and is Ready', () => {
    const claimOf = claimsFor([pinned, member]);
    expect(usableSources(claimOf, pinned, pod('web'), PINNED)).toEqual({
      addresses: ['2001:db8:200::7', '192.0.2.18'],
      anycast: [],
    });
    expect(usableSources(claimOf, member, pod('dns'), PINNED)).toEqual({
      addresses: ['2001:db8:100::5'],
      anycast: ['2001:db8:300::1'],
    });
  });

  it('lose a pinned address whose claim another pod holds, and its node-prefix address stays', () => {
    const other = entry('web-2', { ip6: '2001:db8:200::7', pinned: true });
    const claimOf = claimsFor([other]);
    expect(usableSources(claimOf, pinned, pod('web'), PINNED).addresses).toEqual(['192.0.2.18']);
  });

  it('lose anycast while the pod is not Ready or being deleted, and without its group claim', () => {
    const claimOf = claimsFor([member]);
    expect(usableSources(claimOf, member, pod('dns', { ready: false }), PINNED).anycast).toEqual(
      [],
    );
    expect(
      usableSources(claimOf, member, pod('dns', { terminating: true }), PINNED).anycast,
    ).toEqual([]);
    const stranger = entry('x', {
      ip6: '2001:db8:100::6',
      anycast: ['2001:db8:300::1'],
      claimKey: 'Pod/x',
    });
    expect(usableSources(claimOf, stranger, pod('x'), PINNED).anycast).toEqual([]);
    expect(usableSources(claimsFor([]), member, pod('dns'), PINNED).anycast).toEqual([]);
  });
});
