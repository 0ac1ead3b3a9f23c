// The pure parts of Service addresses: scope by type and class, families by policy, the ranges
// grants offer, and which addresses of a range are handed out automatically.
import { LOAD_BALANCER_CLASS, Service } from '@flock/api';
import { describe, expect, it } from 'vitest';
import { inRanges, lowestFree, usableCount } from './service-addresses.js';
import { offers, serviceScope, wantedFamilies, type Namespace } from './service-scope.js';
import { serviceTargets } from './service-targets.js';
import { makePool } from '../testing/fixtures.js';
import {
  grantNamespace,
  namespaceObject,
  serviceObject,
  servicePool,
  type ServiceInput,
} from '../testing/services.js';

const svc = (i: ServiceInput = {}, name = 'web') => Service.parse(serviceObject(name, i));
const pool = (name: string, o: Parameters<typeof servicePool>[1] = {}) =>
  makePool(name, servicePool(name, o).spec);
const ns = (name: string, labels: Record<string, string> = {}): Namespace =>
  namespaceObject(name, labels);

describe('serviceScope', () => {
  it('serves its class, and unset classes when told to; another class is foreign', () => {
    expect(serviceScope(svc({ loadBalancerClass: LOAD_BALANCER_CLASS }), false)).toBe('serve');
    expect(serviceScope(svc(), true)).toBe('serve');
    expect(serviceScope(svc(), false)).toBe('foreign');
    expect(serviceScope(svc({ loadBalancerClass: 'example.com/lb' }), true)).toBe('foreign');
    expect(serviceScope(svc({ type: 'ClusterIP' }), true)).toBe('none');
    expect(serviceScope(undefined, true)).toBe('none');
  });
});

describe('wantedFamilies', () => {
  it('takes the first family of a SingleStack Service, all of a dual-stack one', () => {
    expect(wantedFamilies(svc({ families: ['IPv4', 'IPv6'], policy: 'SingleStack' }))).toEqual({
      families: [4],
      required: false,
    });
    expect(wantedFamilies(svc({ families: ['IPv4', 'IPv6'], policy: 'PreferDualStack' }))).toEqual({
      families: [4, 6],
      required: false,
    });
    expect(wantedFamilies(svc({ families: ['IPv6', 'IPv4'], policy: 'RequireDualStack' }))).toEqual(
      { families: [6, 4], required: true },
    );
  });
});

describe('offers', () => {
  const all = () => true;

  it('gives the ranges of the grants that cover the namespace and the Service, pool by pool', () => {
    const pools = [
      pool('b', { cidrs: ['2001:db8:500::/126'], grants: [{ anyNamespace: true }] }),
      pool('a', {
        grants: [
          grantNamespace('shop', { serviceSelector: { matchLabels: { expose: 'public' } } }),
          { namespaceSelector: { matchLabels: { team: 'web' } }, cidrs: ['203.0.113.64/30'] },
        ],
      }),
    ];
    expect(offers(pools, ns('shop'), svc(), all)).toEqual([
      { pool: 'b', family: 6, cidrs: ['2001:db8:500::/126'] },
    ]);
    expect(
      offers(pools, ns('shop', { team: 'web' }), svc({ labels: { expose: 'public' } }), all),
    ).toEqual([
      { pool: 'a', family: 6, cidrs: ['2001:db8:400::/126'] },
      { pool: 'a', family: 4, cidrs: ['203.0.113.64/30'] },
      { pool: 'b', family: 6, cidrs: ['2001:db8:500::/126'] },
    ]);
    // A pool whose ranges are refused or withdrawn offers nothing.
    expect(offers(pools, ns('shop'), svc(), (p) => p !== 'b')).toEqual([]);
  });

  it('matches no selector for a namespace it does not know (only anyNamespace)', () => {
    const pools = [pool('a', { grants: [{ namespaceSelector: {} }] })];
    expect(offers(pools, undefined, svc(), () => true)).toEqual([]);
    expect(offers(pools, ns('shop'), svc(), () => true)).toHaveLength(2);
  });
});

describe('Service range addresses', () => {
  it('skips the network and broadcast (IPv4) and the all-zero (IPv6) address, and what is taken', () => {
    expect(lowestFree(['203.0.113.64/30'], new Set())).toBe('203.0.113.65');
    expect(lowestFree(['203.0.113.64/30'], new Set([0xcb007141n]))).toBe('203.0.113.66');
    expect(lowestFree(['203.0.113.64/30'], new Set([0xcb007141n, 0xcb007142n]))).toBeUndefined();
    expect(lowestFree(['203.0.113.64/31', '203.0.113.70/32'], new Set([0xcb007140n]))).toBe(
      '203.0.113.65',
    );
    expect(lowestFree(['2001:db8:400::/126', '2001:db8:401::/128'], new Set())).toBe(
      '2001:db8:400::1',
    );
    expect(usableCount(['203.0.113.64/30', '2001:db8:400::/126', '198.51.100.7/32'])).toBe(6n);
    expect(inRanges('2001:db8:400::3', ['203.0.113.64/30', '2001:db8:400::/126'])).toBe(true);
    expect(inRanges('2001:db8:400::4', ['2001:db8:400::/126'])).toBe(false);
  });
});

describe('serviceTargets', () => {
  const v6 = { pool: 'a', family: 6 as const, cidrs: ['2001:db8:400::/126'] };
  const dual = { families: [6, 4] as (4 | 6)[], required: false };
  const note = (t: ReturnType<typeof serviceTargets>) => ('note' in t ? t.note : undefined);

  it('takes requested addresses of its families inside its grants, canonical', () => {
    expect(serviceTargets(svc(), [{ ip: '2001:DB8:400:0::2', family: 6 }], dual, [v6])).toEqual([
      { family: 6, address: '2001:db8:400::2', offered: [v6] },
    ]);
    expect(note(serviceTargets(svc(), [{ ip: '2001:db8:401::2', family: 6 }], dual, [v6]))).toBe(
      "2001:db8:401::2 is not in a Service range granted to namespace shop (and Service web's labels)",
    );
    const single6 = { families: [6] as (4 | 6)[], required: false };
    expect(note(serviceTargets(svc(), [{ ip: '192.0.2.1', family: 4 }], single6, [v6]))).toBe(
      "192.0.2.1 is an IPv4 address; the Service's families are IPv6",
    );
    const require = { families: [6, 4] as (4 | 6)[], required: true };
    expect(note(serviceTargets(svc(), [{ ip: '2001:db8:400::2', family: 6 }], require, [v6]))).toBe(
      'RequireDualStack: ask for an IPv4 address too',
    );
  });

  it('takes every granted family automatically; RequireDualStack needs all of them', () => {
    expect(serviceTargets(svc(), undefined, dual, [v6])).toEqual([{ family: 6, offered: [v6] }]);
    expect(note(serviceTargets(svc(), undefined, { ...dual, required: true }, [v6]))).toBe(
      "no Pool's services.grants give namespace shop (and Service web's labels) an IPv4 range",
    );
    expect(note(serviceTargets(svc(), undefined, dual, []))).toContain('an IPv6 or IPv4 range');
  });
});
