import { describe, expect, it } from 'vitest';
import { hostVethName } from '../datapath/index.js';
import { advertisedCount, planAnnouncements, toBirdModel } from './announcements.js';
import { NODE_CONFIG, claimsFor, entry, pod } from '../../testing/routing-fixtures.js';
import type { Pod } from '@flock/api';

const spec = NODE_CONFIG.spec;
const podsOf = (...list: Pod[]) => {
  const byKey = new Map(list.map((p) => [`${p.metadata.namespace}/${p.metadata.name}`, p]));
  return (namespace: string, name: string) => byKey.get(`${namespace}/${name}`);
};
const veth = (name: string) => hostVethName(`c-${name}`, 'eth0');
/** The plan with every entry holding the claims of what it asks for (unless told otherwise). */
const planFor = (
  input: Omit<Parameters<typeof planAnnouncements>[0], 'claimOf'>,
  claimOf = claimsFor(input.entries, { pinnedCIDRs: input.spec.pinnedCIDRs ?? [] }),
) => planAnnouncements({ ...input, claimOf });

describe('announcement plan', () => {
  it('always announces the aggregates, even without pods', () => {
    const plan = planFor({ spec, entries: [], podOf: podsOf() });
    expect(plan.aggregates).toEqual(['2001:db8:100::/64', '192.0.2.16/28']);
    expect(plan.hostRoutes).toEqual([]);
    expect(plan.anycast.size).toBe(0);
  });

  it("never announces a Private pool's IPv4: not the slice, not a pod's address; a pinned one still", () => {
    const privateSpec = {
      ...spec,
      ipv4: { assign: 'Always' as const, mode: 'Private' as const, clusterCIDRs: ['192.0.2.0/24'] },
    };
    const entries = [
      entry('carved', { ip6: '2001:db8:100::5', ip4: '192.0.2.18' }),
      entry('pinned', { ip6: '2001:db8:200::7', ip4: '198.51.100.7', pinned: true }),
    ];
    const plan = planFor({
      spec: privateSpec,
      entries,
      podOf: podsOf(pod('carved'), pod('pinned')),
    });
    expect(plan.aggregates).toEqual(['2001:db8:100::/64']);
    expect(plan.hostRoutes).toEqual(['198.51.100.7', '2001:db8:200::7']);
    // With a translation prefix, the slice's part of it: how other nodes' pods reach this one's.
    const translated = planFor({
      spec: {
        ...privateSpec,
        ipv4: { ...privateSpec.ipv4, interNodePrefix: 'fd12:3456:789a:4::/96' },
      },
      entries,
      podOf: podsOf(pod('carved'), pod('pinned')),
    });
    expect(translated.aggregates).toEqual(['2001:db8:100::/64', 'fd12:3456:789a:4::c000:210/124']);
  });

  it('announces pinned and outside-aggregate addresses only while the pod is live with the same UID', () => {
    const entries = [
      entry('pinned', { ip6: '2001:db8:200::7', ip4: '198.51.100.7', pinned: true }),
      entry('outside', { ip6: '2001:db8:999::1' }),
      entry('carved', { ip6: '2001:db8:100::5', ip4: '192.0.2.18' }),
      entry('gone', { ip6: '2001:db8:200::8', pinned: true }),
      entry('reused', { ip6: '2001:db8:200::9', pinned: true }),
      entry('done', { ip6: '2001:db8:200::a', pinned: true }),
      entry('adding', { ip6: '2001:db8:200::b', pinned: true, state: 'pending' }),
    ];
    const plan = planFor({
      spec,
      entries,
      podOf: podsOf(
        pod('pinned'),
        pod('outside'),
        pod('carved'),
        pod('reused', { uid: 'a-new-pod' }),
        pod('done', { phase: 'Succeeded' }),
        pod('adding'),
      ),
    });
    expect(plan.hostRoutes).toEqual(['198.51.100.7', '2001:db8:200::7', '2001:db8:999::1']);
    expect(plan.livePods).toBe(3);
  });

  it('a pinned pod that is not Ready is still announced (liveness, not readiness)', () => {
    const plan = planFor({
      spec,
      entries: [entry('p', { ip6: '2001:db8:200::7', pinned: true })],
      podOf: podsOf(pod('p', { ready: false })),
    });
    expect(plan.hostRoutes).toEqual(['2001:db8:200::7']);
  });

  it('withdraws pinned addresses and anycast of a pod being deleted, keeps its other host routes (2026-08-16)', () => {
    // The kubelet died: the pod is evicted (deletionTimestamp) but never confirmed, still Ready
    // in the cache; its replacement on another node announces the same pinned address.
    const plan = planFor({
      spec,
      entries: [
        entry('evicted', { ip6: '2001:db8:200::7', pinned: true, anycast: ['2001:db8:300::1'] }),
        entry('foreign', { ip6: '2001:db8:999::1' }),
      ],
      podOf: podsOf(pod('evicted', { terminating: true }), pod('foreign', { terminating: true })),
    });
    expect(plan.hostRoutes).toEqual(['2001:db8:999::1']);
    expect(plan.anycast.size).toBe(0);
    expect(plan.livePods).toBe(2);
  });

  it('routes anycast only through Ready live pods, sorted, one entry per address', () => {
    const any = ['2001:db8:300::1', '203.0.113.5'];
    const entries = [
      entry('b', { ip6: '2001:db8:100::2', ip4: '192.0.2.18', anycast: any }),
      entry('a', { ip6: '2001:db8:100::1', ip4: '192.0.2.17', anycast: any }),
      entry('slow', { ip6: '2001:db8:100::3', ip4: '192.0.2.19', anycast: any }),
      entry('old', { ip6: '2001:db8:100::4', ip4: '192.0.2.20', anycast: any }),
    ];
    const plan = planFor({
      spec,
      entries,
      podOf: podsOf(pod('a'), pod('b'), pod('slow', { ready: false }), pod('old', { uid: 'x' })),
    });
    const both = [veth('a'), veth('b')].sort();
    expect([...plan.anycast]).toEqual([
      ['2001:db8:300::1', both],
      ['203.0.113.5', both],
    ]);
  });

  it('withdraws an anycast address when no owner is Ready', () => {
    const plan = planFor({
      spec,
      entries: [entry('a', { anycast: ['2001:db8:300::1'] })],
      podOf: podsOf(pod('a', { ready: false })),
    });
    expect(plan.anycast.size).toBe(0);
  });

  it('leaves out (and warns about) anycast outside the ranges and IPv4 anycast on a pod without IPv4', () => {
    const plan = planFor({
      spec: { ...spec, anycastCIDRs: ['2001:db8:300::/120', '203.0.113.0/28'] },
      entries: [entry('a', { anycast: ['2001:db8:301::1', '203.0.113.1', '2001:db8:300::2'] })],
      podOf: podsOf(pod('a')),
    });
    expect([...plan.anycast.keys()]).toEqual(['2001:db8:300::2']);
    expect(plan.warnings).toEqual([
      "anycast 2001:db8:301::1 of pod default/a is outside this node's anycast ranges",
      'anycast 203.0.113.1 of pod default/a is IPv4 but the pod has no IPv4 address',
    ]);
  });

  it('builds the BIRD model and counts what it announces', () => {
    const plan = planFor({
      spec,
      entries: [entry('a', { ip6: '2001:db8:200::7', pinned: true, anycast: ['2001:db8:300::1'] })],
      podOf: podsOf(pod('a')),
    });
    const model = toBirdModel({ plan, spec, routerId: '192.0.2.1', peers: [] });
    expect(model).toEqual({
      routerId: '192.0.2.1',
      asn: 64512,
      peers: [],
      aggregates: ['2001:db8:100::/64', '192.0.2.16/28'],
      pinned: ['2001:db8:200::7'],
      anycast: ['2001:db8:300::1'],
    });
    expect(advertisedCount(model)).toBe(4);
  });

  it("puts each pod's own communities on its host routes and anycast addresses, while the NodeConfig allows them", () => {
    const bgp = {
      ...spec.bgp,
      localPreference: 300,
      communities: { aggregates: { standard: ['65000:100'] } },
      allowedPodCommunities: { standard: ['65000:1', '65000:2'], large: ['65000:9:9'] },
    };
    const any = ['2001:db8:300::1'];
    const entries = [
      entry('a', { ip6: '2001:db8:200::7', pinned: true, anycast: any, communities: ['65000:1'] }),
      entry('b', { ip6: '2001:db8:100::2', anycast: any, communities: ['65000:2', '65000:9:9'] }),
      entry('old', { ip6: '2001:db8:200::8', pinned: true, communities: ['65000:1', '65000:3'] }),
      entry('plain', { ip6: '2001:db8:200::9', pinned: true }),
    ];
    // The legacy grant: allowedPodCommunities count for namespaces granted by anyNamespace.
    const granted = { ...spec, bgp, pinnedGrants: [{ anyNamespace: true }] };
    const plan = planFor({
      spec: granted,
      entries,
      podOf: podsOf(pod('a'), pod('b'), pod('old'), pod('plain')),
    });
    // b's own address lies in the aggregate: not announced alone, so nothing to tag there.
    expect([...plan.communities]).toEqual([
      ['2001:db8:200::7', ['65000:1']],
      ['2001:db8:200::8', ['65000:1']],
      ['2001:db8:300::1', ['65000:1', '65000:2', '65000:9:9']],
    ]);
    expect(plan.warnings).toEqual([
      "community 65000:3 of pod default/old is no longer allowed by a grant of this node's Pool",
    ]);
    const model = toBirdModel({ plan, spec: granted, routerId: '192.0.2.1', peers: [] });
    expect(model).toMatchObject({
      localPreference: 300,
      communities: bgp.communities,
      addressCommunities: [
        { address: '2001:db8:200::7', standard: ['65000:1'], large: [] },
        { address: '2001:db8:200::8', standard: ['65000:1'], large: [] },
        { address: '2001:db8:300::1', standard: ['65000:1', '65000:2'], large: ['65000:9:9'] },
      ],
    });
  });

  it('announces a pinned address only while its pod holds the claim, anycast only for its group', () => {
    const entries = [
      entry('held', { ip6: '2001:db8:200::7', pinned: true }),
      entry('lost', { ip6: '2001:db8:200::8', pinned: true }),
      entry('member', { ip6: '2001:db8:100::2', anycast: ['2001:db8:300::1'] }),
      entry('stranger', {
        ip6: '2001:db8:100::3',
        namespace: 'evil',
        anycast: ['2001:db8:300::1'],
      }),
      entry('unclaimed', { ip6: '2001:db8:100::4', anycast: ['2001:db8:300::2'] }),
    ];
    const claims = claimsFor(entries, { except: ['2001:db8:200::8', '2001:db8:300::2'] });
    const plan = planFor(
      {
        spec,
        entries,
        podOf: podsOf(
          pod('held'),
          pod('lost'),
          pod('member'),
          { ...pod('stranger'), metadata: { ...pod('stranger').metadata, namespace: 'evil' } },
          pod('unclaimed'),
        ),
      },
      claims,
    );
    expect(plan.hostRoutes).toEqual(['2001:db8:200::7']);
    expect([...plan.anycast]).toEqual([['2001:db8:300::1', [veth('member')]]]);
    expect(plan.warnings).toEqual([
      'anycast 2001:db8:300::1 of pod evil/stranger is not claimed by its group',
      'anycast 2001:db8:300::2 of pod default/unclaimed is not claimed by its group',
      'pinned 2001:db8:200::8 of pod default/lost is not claimed by it',
    ]);
  });

  it('withdraws a pinned address whose range left the Pool (not announced as foreign)', () => {
    const entries = [entry('web', { ip6: '2001:db8:200::7', pinned: true })];
    const shrunk = { ...spec, pinnedCIDRs: ['198.51.100.0/24'] };
    const plan = planFor({ spec: shrunk, entries, podOf: podsOf(pod('web')) }, claimsFor(entries));
    expect(plan.hostRoutes).toEqual([]);
    expect(plan.warnings).toEqual([
      "pinned 2001:db8:200::7 of pod default/web is outside this node's pinned ranges",
    ]);
  });
});
