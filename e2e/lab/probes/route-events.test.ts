import { describe, expect, it } from 'vitest';
import { parseRouteEvent, routeEvents } from './route-events.js';

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
