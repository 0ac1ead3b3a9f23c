// CNI ADD: allocation, wiring, commit, and what it refuses.
import { CniErrorCode, claimName } from '@flock/api';
import { pod as buildPod } from '@flock/api/testing';
import { AddressAllocator } from '@flock/ipam';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ADDRESSCLAIMS, PODS } from '@flock/kube';
import { hostVethName } from '../datapath/index.js';
import {
  claims,
  committedHook,
  datapath,
  handlers,
  hostLinks,
  make,
  node,
  nodeConfig,
  pod,
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

describe('CNI ADD', () => {
  it('allocates, wires, commits and answers a 1.1.0 result', async () => {
    const r = await handlers.handle(request('ADD'));
    expect(r.ok).toBe(true);
    if (!r.ok) return;
    expect(r.result?.ips?.map((i) => i.address)).toEqual(['2001:db8:100::1/128', '192.0.2.17/32']);
    expect(store.get('c1', 'eth0')).toMatchObject({
      state: 'committed',
      ip6: '2001:db8:100::1',
      podUID: 'uid-web',
    });
    expect(committedHook).toEqual(['c1']);
    expect(hostLinks()).toEqual([hostVethName('c1', 'eth0')]);
  });

  it('is idempotent: a repeated ADD keeps the same addresses', async () => {
    const first = await handlers.handle(request('ADD'));
    const second = await handlers.handle(request('ADD'));
    expect(second).toEqual(first);
    expect(store.entries()).toHaveLength(1);
  });

  it('undoes everything when the datapath fails, naming the step', async () => {
    datapath.failAt('pod-addresses');
    const r = await handlers.handle(request('ADD'));
    expect(r).toMatchObject({
      ok: false,
      error: { code: CniErrorCode.SetupFailed, msg: expect.stringContaining('pod-addresses') },
    });
    expect(store.entries()).toEqual([]);
    expect(node!.allocator.allocations()).toEqual([]);
    expect(hostLinks()).toEqual([]);
  });

  it('a failed ADD gives its addresses back unquarantined (no pod used them); a DEL quarantines', async () => {
    datapath.failAt('pod-addresses');
    const refused = await handlers.handle(request('ADD'));
    expect(refused.ok).toBe(false);
    const counts = node!.allocator.counts();
    expect(counts.ipv6.quarantined).toBe(0);
    expect(counts.ipv4?.quarantined ?? 0).toBe(0);
    expect(store.released()).toEqual([]);
    const added = await handlers.handle(request('ADD'));
    expect(added.ok).toBe(true);
    await handlers.handle(request('DEL'));
    expect(node!.allocator.counts().ipv6.quarantined).toBe(1);
  });

  it('undoes everything when the policy hook fails', async () => {
    make({ hooks: { beforeCommit: async () => Promise.reject(new Error('nft refused')) } });
    const r = await handlers.handle(request('ADD'));
    expect(r).toMatchObject({ ok: false, error: { msg: expect.stringContaining('nft refused') } });
    expect(store.entries()).toEqual([]);
    expect(hostLinks()).toEqual([]);
  });

  it('says try again later before the NodeConfig exists', async () => {
    setNode(undefined);
    expect(await handlers.handle(request('ADD'))).toMatchObject({
      ok: false,
      error: { code: CniErrorCode.TryAgainLater },
    });
  });

  it('needs the pod identity in CNI_ARGS and an existing pod', async () => {
    expect(await handlers.handle(request('ADD', { args: {} }))).toMatchObject({
      ok: false,
      error: { code: CniErrorCode.InvalidEnvironment },
    });
    expect(
      await handlers.handle(
        request('ADD', { args: { K8S_POD_NAMESPACE: 'default', K8S_POD_NAME: 'gone' } }),
      ),
    ).toMatchObject({
      ok: false,
      error: { code: CniErrorCode.UnknownContainer },
    });
    expect(
      await handlers.handle(
        request('ADD', {
          args: { K8S_POD_NAMESPACE: 'default', K8S_POD_NAME: 'web', K8S_POD_UID: 'other' },
        }),
      ),
    ).toMatchObject({ ok: false, error: { code: CniErrorCode.UnknownContainer } });
  });

  it('honours a pinned address inside the pinned ranges and refuses one outside', async () => {
    pods.set('default/web', pod('web', { 'flock.fritzlab.net/pinned-ip': '2001:db8:200::7' }));
    const r = await handlers.handle(request('ADD'));
    expect(r.ok && r.result?.ips?.[0]?.address).toBe('2001:db8:200::7/128');
    pods.set('default/bad', pod('bad', { 'flock.fritzlab.net/pinned-ip': '2001:db8:999::7' }));
    const bad = await handlers.handle(
      request('ADD', {
        containerID: 'c2',
        args: { K8S_POD_NAMESPACE: 'default', K8S_POD_NAME: 'bad' },
      }),
    );
    expect(bad).toMatchObject({
      ok: false,
      error: { code: CniErrorCode.NotAllowed, msg: expect.stringContaining('outside this node') },
    });
    expect(warnings.join()).toContain('FlockAddressRefused');
  });

  it('claims a pinned address of either family for the pod; refuses one another pod holds, with an Event and nothing kept', async () => {
    pods.set(
      'default/web',
      pod('web', { 'flock.fritzlab.net/pinned-ip': '2001:db8:200::7,198.51.100.7' }),
    );
    expect((await handlers.handle(request('ADD'))).ok).toBe(true);
    for (const ip of ['2001:db8:200::7', '198.51.100.7'])
      expect(claims.api.getObject(ADDRESSCLAIMS, claimName(ip))).toMatchObject({
        spec: {
          address: ip,
          kind: 'Pinned',
          namespace: 'default',
          key: 'Pod/web',
          holders: [{ node: 'node-a', pod: 'web', uid: 'uid-web' }],
        },
      });
    expect(store.get('c1', 'eth0')).toMatchObject({ claimKey: 'Pod/web', pinned: true });

    // Another namespace asks for the same IPv4 address: refused, without naming the holder.
    pods.set(
      'other/thief',
      buildPod({
        name: 'thief',
        namespace: 'other',
        annotations: { 'flock.fritzlab.net/pinned-ip': '198.51.100.7' },
      }),
    );
    const args = { K8S_POD_NAMESPACE: 'other', K8S_POD_NAME: 'thief' };
    const netns = datapath.createNetns('/var/run/netns/thief');
    const r = await handlers.handle(request('ADD', { containerID: 'c2', netns, args }));
    expect(r).toMatchObject({
      ok: false,
      error: {
        code: CniErrorCode.NotAllowed,
        msg: 'pinned address 198.51.100.7: it is claimed by another namespace',
      },
    });
    expect(warnings.pop()).toBe(
      'FlockAddressRefused: pinned address 198.51.100.7: it is claimed by another namespace',
    );
    expect(store.get('c2', 'eth0')).toBeUndefined();
    expect(claims.held.get('198.51.100.7')).toBe(0);
  });

  it("a replacement on the holder's own node takes the claim but waits (try again later, no Event) until the holder's network is torn down", async () => {
    const annotations = {
      'flock.fritzlab.net/pinned-ip': '2001:db8:200::7',
      'flock.fritzlab.net/claim-key': 'web',
    };
    pods.set('default/web', pod('web', annotations));
    expect((await handlers.handle(request('ADD'))).ok).toBe(true);
    // The holder is being deleted (its preStop runs); its replacement's ADD comes.
    claims.api.putObject(
      PODS,
      buildPod({ name: 'web', uid: 'uid-web', annotations, terminating: true }),
    );
    pods.set('default/web-2', buildPod({ name: 'web-2', uid: 'uid-web-2', annotations }));
    const args = { K8S_POD_NAMESPACE: 'default', K8S_POD_NAME: 'web-2' };
    const netns = datapath.createNetns('/var/run/netns/web-2');
    const again = () => handlers.handle(request('ADD', { containerID: 'c2', netns, args }));
    expect(await again()).toMatchObject({
      ok: false,
      error: {
        code: CniErrorCode.TryAgainLater,
        msg: "pinned address 2001:db8:200::7: pod default/web on this node still has it while it shuts down; this pod takes it once that pod's network is torn down; try again later",
      },
    });
    expect(warnings).toEqual([]);
    expect(store.get('c2', 'eth0')).toBeUndefined();
    expect(claims.api.getObject(ADDRESSCLAIMS, claimName('2001:db8:200::7'))).toMatchObject({
      spec: { holders: [{ pod: 'web-2', uid: 'uid-web-2' }] },
    });
    expect((await handlers.handle(request('DEL'))).ok).toBe(true);
    const r = await again();
    expect(r.ok && r.result?.ips?.[0]?.address).toBe('2001:db8:200::7/128');
  });

  it('refuses a pinned address in a namespace no grant covers (secure by default)', async () => {
    setNode({
      ...node!,
      nodeConfig: {
        ...nodeConfig,
        spec: {
          ...nodeConfig.spec,
          pinnedGrants: [{ namespaceSelector: { matchLabels: { team: 'a' } } }],
        },
      },
    });
    pods.set('default/web', pod('web', { 'flock.fritzlab.net/pinned-ip': '2001:db8:200::7' }));
    const r = await handlers.handle(request('ADD'));
    expect(r).toMatchObject({
      ok: false,
      error: {
        code: CniErrorCode.NotAllowed,
        msg: expect.stringContaining(
          'namespace default may not claim pinned address 2001:db8:200::7',
        ),
      },
    });
    expect(claims.api.getObject(ADDRESSCLAIMS, claimName('2001:db8:200::7'))).toBeUndefined();
  });

  it('keeps allowed anycast addresses and communities, refuses others with an event', async () => {
    pods.set(
      'default/web',
      pod('web', {
        'flock.fritzlab.net/anycast': '2001:db8:300:0::10',
        'flock.fritzlab.net/bgp-communities': '65000:0666',
      }),
    );
    await handlers.handle(request('ADD'));
    expect(store.get('c1', 'eth0')).toMatchObject({
      anycast: ['2001:db8:300::10'],
      communities: ['65000:666'],
    });
    const refused = async (name: string, annotations: Record<string, string>, why: RegExp) => {
      pods.set(`default/${name}`, pod(name, annotations));
      const args = { K8S_POD_NAMESPACE: 'default', K8S_POD_NAME: name };
      const r = await handlers.handle(request('ADD', { containerID: name, args }));
      expect(r).toMatchObject({ ok: false, error: { code: CniErrorCode.NotAllowed } });
      expect(!r.ok && r.error.msg).toMatch(why);
      expect(store.get(name, 'eth0')).toBeUndefined();
    };
    await refused('evil', { 'flock.fritzlab.net/anycast': '2001:db8:400::1' }, /outside this node/);
    expect(warnings.pop()).toMatch(/^FlockAddressRefused: /);
    const tag = (c: string) => ({ 'flock.fritzlab.net/bgp-communities': c });
    await refused('nox', tag('65000:666,65535:65281'), /65535:65281 are not allowed/);
    expect(warnings.pop()).toMatch(/^FlockCommunityRefused: .*grants that cover it: 65000:666/);
    await refused('typo', tag('65000:66666'), /neither a standard community/);
    expect(warnings.pop()).toMatch(/^FlockCommunityRefused: /);
  });

  it('reports exhaustion with its own code and keeps nothing of the failed ADD', async () => {
    // A /30 IPv4 slice has two usable addresses (never the first or the last).
    const tiny = AddressAllocator.create({ cidr6: '2001:db8:100::/64', cidr4: '192.0.2.16/30' });
    if (!tiny.ok) throw new Error(tiny.error);
    setNode({ nodeConfig, allocator: tiny.value });
    const results = [];
    for (let i = 0; i < 3; i++) {
      pods.set(`default/p${i}`, pod(`p${i}`));
      const args = { K8S_POD_NAMESPACE: 'default', K8S_POD_NAME: `p${i}` };
      const netns = datapath.createNetns(`/var/run/netns/x${i}`);
      results.push(await handlers.handle(request('ADD', { containerID: `c${i}`, netns, args })));
    }
    expect(results.map((r) => r.ok)).toEqual([true, true, false]);
    expect(results[2]).toMatchObject({ ok: false, error: { code: CniErrorCode.Exhausted } });
    expect(store.entries()).toHaveLength(2);
    expect(tiny.value.allocations()).toHaveLength(2);
  });
});
