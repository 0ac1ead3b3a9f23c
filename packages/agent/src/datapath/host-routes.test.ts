import { describe, expect, it } from 'vitest';
import {
  anycastRouteAt,
  anycastUpToDate,
  diffBlackholes,
  leftoverPodRoutes,
  planAnycast,
  toAnycastRoutes,
  toFlockRoutes,
} from './host-routes.js';
import type { NsRoute } from './model.js';

const r = (
  dst: string,
  proto: number,
  nexthops: NsRoute['nexthops'],
  type: NsRoute['type'] = 'unicast',
): NsRoute => ({
  dst,
  family: dst.includes(':') ? 6 : 4,
  type,
  proto,
  metric: dst.includes(':') ? 1024 : 0,
  nexthops,
});
const routes: NsRoute[] = [
  r('2001:db8:100::5/128', 241, [{ dev: 'flockaaaa' }]),
  r('192.0.2.5/32', 241, [{ dev: 'flockaaaa' }]),
  r('2001:db8:100::6/128', 241, [{ dev: 'flockbbbb' }]),
  r('2001:db8:100::/64', 241, [], 'blackhole'),
  r('198.51.100.7/32', 242, [{ dev: 'flockbbbb' }, { dev: 'flockaaaa' }]),
  r('10.0.0.0/8', 3, [{ dev: 'eth0', gateway: '10.0.0.1' }]),
];

describe('anycast planning', () => {
  it('goes via each pod /128 for IPv6, sorted, and skips veths without a pod route', () => {
    const plan = planAnycast(
      { ip: '2001:db8:aaaa::1', family: 6 },
      ['flockbbbb', 'flockzzzz', 'flockaaaa', 'flockaaaa'],
      routes,
    );
    expect(plan).toEqual({
      want: {
        dst: '2001:db8:aaaa::1/128',
        type: 'unicast',
        proto: 242,
        nexthops: [
          { dev: 'flockaaaa', gateway: '2001:db8:100::5' },
          { dev: 'flockbbbb', gateway: '2001:db8:100::6' },
        ],
      },
      hostVeths: ['flockaaaa', 'flockbbbb'],
      skipped: [{ hostVeth: 'flockzzzz', reason: 'no flock pod route through it' }],
    });
  });

  it('uses plain devices for IPv4 and treats nexthop order as irrelevant', () => {
    const plan = planAnycast({ ip: '198.51.100.7', family: 4 }, ['flockaaaa', 'flockbbbb'], routes);
    expect(plan.want?.nexthops).toEqual([{ dev: 'flockaaaa' }, { dev: 'flockbbbb' }]);
    expect(anycastUpToDate(anycastRouteAt(routes, '198.51.100.7/32'), plan)).toBe(true);
    const one = planAnycast({ ip: '198.51.100.7', family: 4 }, ['flockaaaa'], routes);
    expect(anycastUpToDate(anycastRouteAt(routes, '198.51.100.7/32'), one)).toBe(false);
    const none = planAnycast({ ip: '198.51.100.7', family: 4 }, [], routes);
    expect(none.want).toBeUndefined();
    expect(anycastUpToDate(anycastRouteAt(routes, '198.51.100.7/32'), none)).toBe(false);
    expect(anycastUpToDate(undefined, none)).toBe(true);
  });
});

describe('route views', () => {
  it('classifies flock routes and ignores others', () => {
    expect(toFlockRoutes(routes).map((x) => `${x.kind} ${x.dst}`)).toEqual([
      'anycast 198.51.100.7/32',
      'blackhole 2001:db8:100::/64',
      'pod 192.0.2.5/32',
      'pod 2001:db8:100::5/128',
      'pod 2001:db8:100::6/128',
    ]);
    expect(toAnycastRoutes(routes)).toEqual([
      { ip: '198.51.100.7', hostVeths: ['flockaaaa', 'flockbbbb'] },
    ]);
  });

  it('diffs blackholes against the flock ones only', () => {
    expect(diffBlackholes(routes, ['2001:db8:100::/64', '192.0.2.0/26'])).toEqual({
      add: ['192.0.2.0/26'],
      remove: [],
    });
    expect(diffBlackholes(routes, [])).toEqual({ add: [], remove: ['2001:db8:100::/64'] });
  });

  it('finds leftovers of a torn-down pod but leaves the route of whoever holds the address now', () => {
    const dsts = ['2001:db8:100::5/128', '2001:db8:100::6/128', '198.51.100.9/32'];
    const extra = [...routes, r('198.51.100.9/32', 241, [{ dev: 'lo' }])];
    expect(leftoverPodRoutes(extra, dsts, 'flockaaaa').map((x) => x.dst)).toEqual([
      '2001:db8:100::5/128',
      '198.51.100.9/32',
    ]);
  });
});
