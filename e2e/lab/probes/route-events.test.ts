import { describe, expect, it } from 'vitest';
import { hopFlaps, parseRouteEvent, routeChanges, routeEvents } from './route-events.js';

describe('ip -ts monitor route lines', () => {
  it('reads an announcement, a deletion and its next hop, by the kernel clock', () => {
    const lines = [
      '[2026-12-02T02:35:15.460772] 2001:db8:100::/64 via fd00::2 dev r-n1 proto bird metric 32 pref medium',
      '[2026-12-02T02:35:16.000000] Deleted 2001:db8:100::/64 via inet6 fd00:0::2 dev r-n1 proto bird metric 32',
      '[2026-12-02T02:35:17.5] 2001:db8:100:0::5 via fd00::3 dev r-n2 proto bird',
      '[2026-12-02T02:35:18.5] 10.20.0.7 via 10.0.0.2 dev r-n1 proto bird',
    ];
    expect(routeEvents(lines)).toEqual([
      {
        at: Date.parse('2026-12-02T02:35:15.460772'),
        deleted: false,
        prefix: '2001:db8:100::/64',
        via: 'fd00::2',
      },
      {
        at: Date.parse('2026-12-02T02:35:16.000000'),
        deleted: true,
        prefix: '2001:db8:100::/64',
        via: 'fd00::2',
      },
      {
        at: Date.parse('2026-12-02T02:35:17.5'),
        deleted: false,
        prefix: '2001:db8:100::5/128',
        via: 'fd00::3',
      },
      {
        at: Date.parse('2026-12-02T02:35:18.5'),
        deleted: false,
        prefix: '10.20.0.7/32',
        via: '10.0.0.2',
      },
    ]);
  });

  it('leaves out what is not a route event: multipath continuation lines, route types, no stamp', () => {
    expect(parseRouteEvent('\tnexthop via fd00::2 dev r-n1 weight 1')).toBeUndefined();
    expect(
      parseRouteEvent('[2026-12-02T02:35:15.1] Deleted blackhole 2001:db8::/64'),
    ).toBeUndefined();
    expect(parseRouteEvent('2001:db8::/64 via fd00::2 dev r-n1')).toBeUndefined();
    const multipath = parseRouteEvent('[2026-12-02T02:35:15.1] 2001:db8:9::1 proto bird metric 32');
    expect(multipath).toEqual({
      at: Date.parse('2026-12-02T02:35:15.1'),
      deleted: false,
      prefix: '2001:db8:9::1/128',
    });
  });
});

describe('route changes of one next hop', () => {
  const lines = [
    '[2026-12-02T02:35:15.1] 2001:db8:9::1 proto bird metric 32 pref medium',
    '\tnexthop via fd00::1 dev r-n1 weight 1',
    '\tnexthop via fd00::2 dev r-n2 weight 1',
    '2001:db8:9::2 via fd00:0::2 dev r-n2 proto bird metric 32',
    'Deleted 2001:db8:9::3 via fd00::1 dev r-n1 proto bird metric 32',
  ];

  it('reads a multipath route with every next hop, with or without stamps', () => {
    expect(routeChanges(lines)).toEqual([
      { deleted: false, prefix: '2001:db8:9::1/128', via: ['fd00::1', 'fd00::2'] },
      { deleted: false, prefix: '2001:db8:9::2/128', via: ['fd00::2'] },
      { deleted: true, prefix: '2001:db8:9::3/128', via: ['fd00::1'] },
    ]);
  });

  it("tells a hop's own flap from a change of a multipath route's other members", () => {
    const before = [
      { prefix: '2001:db8:9::1/128', via: ['fd00::2', 'fd00::3'] },
      { prefix: '2001:db8:9::2/128', via: ['fd00::2'] },
      { prefix: '2001:db8:9::3/128', via: ['fd00::1'] },
    ];
    // fd00::3 left the multipath route and fd00::1 joined it: fd00::2 stayed in it throughout.
    expect(hopFlaps(before, routeChanges(lines), 'fd00::2')).toEqual([]);
    expect(hopFlaps(before, routeChanges(lines), 'fd00::1')).toEqual([
      { deleted: false, prefix: '2001:db8:9::1/128', via: ['fd00::1', 'fd00::2'] },
      { deleted: true, prefix: '2001:db8:9::3/128', via: ['fd00::1'] },
    ]);
    // Left and back: both changes are flaps, though the table ends as it began.
    const away = routeChanges([
      '2001:db8:9::1 via fd00::3 dev r-n3 proto bird',
      '2001:db8:9::1 proto bird',
      '\tnexthop via fd00::2 dev r-n2 weight 1',
      '\tnexthop via fd00::3 dev r-n3 weight 1',
    ]);
    expect(hopFlaps(before, away, 'fd00::2').map((c) => c.via)).toEqual([
      ['fd00::3'],
      ['fd00::2', 'fd00::3'],
    ]);
  });
});
