// CNI ADD and IPv4: every pod under ipv4.assign Always (unless it asks for none), only pods that
// ask from granted namespaces under OnRequest; a pod that asks where it cannot have one is refused.
import { CniErrorCode, IPV4_ANNOTATION, type NodeConfigSpec } from '@flock/api';
import { grantTo, pod } from '@flock/api/testing';
import { AddressAllocator } from '@flock/ipam';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import {
  datapath,
  handlers,
  nodeConfig,
  pods,
  request,
  setNode,
  setUp,
  store,
  tearDown,
  warnings,
} from '../../testing/cni-handlers.js';

beforeEach(setUp);
afterEach(tearDown);

/** The node's spec with `over`, and an allocator over its (maybe tiny) IPv4 slice. */
function onNode(over: Partial<NodeConfigSpec>): AddressAllocator {
  const spec = { ...nodeConfig.spec, ...over };
  const alloc = AddressAllocator.create({
    cidr6: spec.cidr6,
    ...(spec.cidr4 ? { cidr4: spec.cidr4 } : {}),
    pinnedCIDRs: spec.pinnedCIDRs ?? [],
  });
  if (!alloc.ok) throw new Error(alloc.error);
  setNode({ nodeConfig: { ...nodeConfig, spec }, allocator: alloc.value });
  return alloc.value;
}

let n = 0;
/** ADD of a new pod `name` of namespace `ns` with `annotations`. */
async function add(name: string, annotations: Record<string, string> = {}, ns = 'default') {
  pods.set(`${ns}/${name}`, pod({ name, namespace: ns, annotations }));
  n += 1;
  return handlers.handle(
    request('ADD', {
      containerID: `c-${name}`,
      netns: datapath.createNetns(`/var/run/netns/v4-${n}`),
      args: { K8S_POD_NAMESPACE: ns, K8S_POD_NAME: name },
    }),
  );
}
const ips = (r: Awaited<ReturnType<typeof add>>) =>
  r.ok ? (r.result?.ips ?? []).map((i) => i.address) : r.error.msg;
const ask = { [IPV4_ANNOTATION]: 'public' };

describe('IPv4 under assign: Always (the default)', () => {
  it('gives every pod IPv4, except one that asks for none', async () => {
    expect(ips(await add('a'))).toEqual(['2001:db8:100::1/128', '192.0.2.17/32']);
    expect(ips(await add('b', ask))).toEqual(['2001:db8:100::2/128', '192.0.2.18/32']);
    expect(ips(await add('c', { [IPV4_ANNOTATION]: 'none' }))).toEqual(['2001:db8:100::3/128']);
    expect(store.get('c-c', 'eth0')?.ip4).toBeUndefined();
  });

  it('refuses a bad value, and a pod that asks on a node without an IPv4 slice', async () => {
    const bad = await add('typo', { [IPV4_ANNOTATION]: 'yes' });
    expect(bad).toMatchObject({ ok: false, error: { code: CniErrorCode.NotAllowed } });
    expect(ips(bad)).toMatch(
      /annotation flock.fritzlab.net\/ipv4: "yes" is not one of public, none/,
    );
    expect(warnings.pop()).toMatch(/^FlockAddressRefused: /);
    const { cidr4: _none, ...v6only } = nodeConfig.spec;
    onNode({ ...v6only, cidr4: undefined });
    expect(ips(await add('plain'))).toEqual(['2001:db8:100::1/128']);
    expect(ips(await add('needs', ask))).toMatch(/asks for public IPv4 .* has no ipv4 range/);
    expect(store.get('c-needs', 'eth0')).toBeUndefined();
  });
});

describe('IPv4 of a Private pool', () => {
  it('gives every pod a private address, and refuses a pod that asks for a public one', async () => {
    onNode({
      cidr4: '10.20.3.0/24',
      ipv4: { assign: 'Always', mode: 'Private', clusterCIDRs: ['10.20.0.0/16'] },
    });
    expect(ips(await add('plain'))).toEqual([expect.stringMatching(/\/128$/), '10.20.3.1/32']);
    expect(ips(await add('wants-public', ask))).toMatch(
      /gives private IPv4 only \(ipv4.mode: Private\)/,
    );
    expect(warnings.pop()).toMatch(/^FlockAddressRefused: /);
    expect(ips(await add('v6', { [IPV4_ANNOTATION]: 'none' }))).toEqual([
      expect.stringMatching(/\/128$/),
    ]);
  });
});

describe('IPv4 under assign: OnRequest', () => {
  const onRequest = {
    cidr4: '192.0.2.16/30',
    ipv4: { assign: 'OnRequest' as const, grants: [grantTo('web')] },
  };

  it('gives IPv4 to pods that ask from granted namespaces only; the rest are IPv6-only and never run out', async () => {
    const alloc = onNode(onRequest);
    // A /30 has two usable addresses: under Always the third pod would fail its ADD.
    const plain = [];
    for (let i = 0; i < 20; i++) plain.push(ips(await add(`p${i}`)));
    expect(plain.every((r) => Array.isArray(r) && r.length === 1 && r[0]!.endsWith('/128'))).toBe(
      true,
    );
    expect(ips(await add('w1', ask, 'web'))).toEqual([
      expect.stringMatching(/\/128$/),
      '192.0.2.17/32',
    ]);
    expect(alloc.counts().ipv4?.allocated).toBe(1);

    const refused = await add('thief', ask, 'other');
    expect(refused).toMatchObject({ ok: false, error: { code: CniErrorCode.NotAllowed } });
    expect(ips(refused)).toMatch(
      /no grant of this node's Pool names namespace other \(ipv4.grants\)/,
    );
    expect(warnings.pop()).toMatch(/^FlockAddressRefused: /);
    expect(store.get('c-thief', 'eth0')).toBeUndefined();
    expect(alloc.counts().ipv4?.allocated).toBe(1);
  });

  it('refuses every asking pod when the grants name nobody (secure by default)', async () => {
    onNode({ ...onRequest, ipv4: { assign: 'OnRequest' } });
    expect(ips(await add('w', ask, 'web'))).toMatch(/no grant .* names namespace web/);
    expect(ips(await add('quiet', {}, 'web'))).toEqual([expect.stringMatching(/\/128$/)]);
  });

  it('reports a full slice as exhaustion to the pods that ask, and only to them', async () => {
    onNode(onRequest);
    const got = [];
    for (const name of ['w1', 'w2', 'w3']) got.push(await add(name, ask, 'web'));
    expect(got.map((r) => r.ok)).toEqual([true, true, false]);
    expect(got[2]).toMatchObject({ ok: false, error: { code: CniErrorCode.Exhausted } });
    expect((await add('plain', {}, 'web')).ok).toBe(true);
  });
});
