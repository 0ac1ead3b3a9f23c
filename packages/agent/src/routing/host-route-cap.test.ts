import { describe, expect, it } from 'vitest';
import type { AnnouncementPlan } from './announcements.js';
import { capHostRoutes } from './host-route-cap.js';

const plan = (): AnnouncementPlan => ({
  aggregates: ['2001:db8:100::/64'],
  hostRoutes: ['2001:db8:200::1', '2001:db8:200::2', '2001:db8:200::3'],
  anycast: new Map([['2001:db8:300::1', ['flock1']]]),
  communities: new Map([
    ['2001:db8:200::3', ['65000:1']],
    ['2001:db8:300::1', ['65000:2']],
  ]),
  services: new Map([
    ['2001:db8:400::1', { service: 'default/web', why: 'externalTrafficPolicy Cluster' }],
  ]),
  livePods: 4,
  warnings: [],
});

describe('the host route cap', () => {
  it('under the cap: the plan as it is', () => {
    const p = plan();
    expect(capHostRoutes(p, 5)).toEqual({ plan: p, leftOut: [] });
  });

  it('past it: Services kept first, then anycast, then pinned addresses in order; a warning names what was left out', () => {
    const { plan: capped, leftOut } = capHostRoutes(plan(), 3);
    expect([...capped.services.keys()]).toEqual(['2001:db8:400::1']);
    expect([...capped.anycast.keys()]).toEqual(['2001:db8:300::1']);
    expect(capped.hostRoutes).toEqual(['2001:db8:200::1']);
    expect(leftOut).toEqual(['2001:db8:200::2', '2001:db8:200::3']);
    expect([...capped.communities.keys()]).toEqual(['2001:db8:300::1']);
    expect(capped.warnings).toEqual([
      expect.stringMatching(
        /^host route cap reached: 5 addresses, 3 announced \(--max-host-routes\); left out: 2001:db8:200::2, 2001:db8:200::3$/,
      ),
    ]);
    expect(capped.aggregates).toEqual(['2001:db8:100::/64']); // never capped
  });
});
