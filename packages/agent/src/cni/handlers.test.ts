import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  API_VERSION,
  CniErrorCode,
  NODECONFIG_KIND,
  silentLogger,
  type AgentRequest,
  type NodeConfig,
} from '@flock/api';
import { AddressAllocator, AllocationStore } from '@flock/ipam';
import type { Pod } from '@flock/api';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { PODS } from '@flock/kube';
import { FakeApiServer } from '@flock/kube/testing';
import { FakeDatapath, hostVethName } from '../datapath/index.js';
import { PodLookupWithFallback, nodePodCache } from '../pods.js';
import { CniHandlers, type CniHandlerDeps, type NodeState } from './handlers.js';

const nodeConfig: NodeConfig = {
  apiVersion: API_VERSION,
  kind: NODECONFIG_KIND,
  metadata: { name: 'node-a', annotations: { 'flock.fritzlab.net/ip-algo': 'sequential' } },
  spec: {
    pool: 'dc1',
    cidr6: '2001:db8:100::/64',
    cidr4: '192.0.2.16/28',
    pinnedCIDRs: ['2001:db8:200::/64', '198.51.100.0/24'],
    anycastCIDRs: ['2001:db8:300::/120'],
    bgp: { asn: 64512, peers: [], allowedPodCommunities: { standard: ['65000:666'] } },
  },
};

const pod = (name: string, annotations: Record<string, string> = {}, uid = `uid-${name}`): Pod => ({
  metadata: { namespace: 'default', name, uid, annotations },
  spec: { nodeName: 'node-a', containers: [] },
});

let dir: string;
let store: AllocationStore;
let datapath: FakeDatapath;
let node: NodeState | undefined;
let pods: Map<string, Pod>;
let warnings: string[];
let committedHook: string[];
let handlers: CniHandlers;
const hostLinks = () =>
  datapath
    .hostState()
    .links.filter((l) => l.kind === 'veth')
    .map((l) => l.name);

function make(extra: Partial<CniHandlerDeps> = {}) {
  handlers = new CniHandlers({
    store,
    datapath,
    node: () => node,
    pods: { get: async (ns, name) => pods.get(`${ns}/${name}`) },
    logger: silentLogger,
    warn: (_pod, reason, message) => warnings.push(`${reason}: ${message}`),
    hooks: { beforeCommit: async (e) => void committedHook.push(e.containerID) },
    ...extra,
  });
}

beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'flock-cni-'));
  store = new AllocationStore(join(dir, 'store.json'));
  await store.load();
  datapath = new FakeDatapath();
  const alloc = AddressAllocator.create({
    cidr6: nodeConfig.spec.cidr6,
    cidr4: nodeConfig.spec.cidr4!,
    pinnedCIDRs: nodeConfig.spec.pinnedCIDRs!,
  });
  if (!alloc.ok) throw new Error(alloc.error);
  node = { nodeConfig, allocator: alloc.value };
  pods = new Map([['default/web', pod('web')]]);
  warnings = [];
  committedHook = [];
  make();
});
afterEach(() => rm(dir, { recursive: true, force: true }));

const request = (
  command: AgentRequest['command'],
  over: Partial<AgentRequest> = {},
): AgentRequest => ({
  command,
  containerID: 'c1',
  ifName: 'eth0',
  netns: datapath.createNetns('/var/run/netns/p1'),
  args: { K8S_POD_NAMESPACE: 'default', K8S_POD_NAME: 'web' },
  config: { cniVersion: '1.1.0', name: 'flock', type: 'flock' },
  ...over,
});

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

  it('undoes everything when the policy hook fails', async () => {
    make({ hooks: { beforeCommit: async () => Promise.reject(new Error('nft refused')) } });
    const r = await handlers.handle(request('ADD'));
    expect(r).toMatchObject({ ok: false, error: { msg: expect.stringContaining('nft refused') } });
    expect(store.entries()).toEqual([]);
    expect(hostLinks()).toEqual([]);
  });

  it('says try again later before the NodeConfig exists', async () => {
    node = undefined;
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
    expect(bad).toMatchObject({ ok: false, error: { code: CniErrorCode.NotAllowed } });
    expect(warnings.join()).toContain('FlockAllocationFailed');
  });

  it('refuses a pinned address of either family that another live pod of the cluster holds, as any of its addresses', async () => {
    const api = new FakeApiServer();
    const put = (p: Pod) => api.putObject(PODS, { apiVersion: 'v1', kind: 'Pod', ...p } as never);
    const holder = (name: string, ips: string[], phase = 'Running', deleted?: string) =>
      put({
        metadata: {
          name,
          namespace: 'default',
          ...(deleted ? { deletionTimestamp: deleted } : {}),
        },
        spec: { nodeName: 'node-b', containers: [] },
        status: { phase, podIP: ips[0], podIPs: ips.map((ip) => ({ ip })) },
      });
    holder('v6-primary', ['2001:db8:200::7', '198.51.100.7']);
    holder('v4-secondary', ['2001:db8:101::1', '198.51.100.9']);
    holder('v6-secondary', ['198.51.100.10', '2001:db8:200::a']);
    holder('done', ['2001:db8:200::b', '198.51.100.11'], 'Succeeded');
    make({ pods: new PodLookupWithFallback(nodePodCache(api, 'node-a', silentLogger), api) });
    let adds = 0;
    const add = async (pinned: string) => {
      const name = `p${++adds}`;
      put(pod(name, { 'flock.fritzlab.net/pinned-ip': pinned }));
      const args = { K8S_POD_NAMESPACE: 'default', K8S_POD_NAME: name };
      const netns = datapath.createNetns(`/var/run/netns/${name}`);
      return handlers.handle(request('ADD', { containerID: name, netns, args }));
    };
    const refusal = (ip: string, by: string) => ({
      ok: false,
      error: {
        code: CniErrorCode.NotAllowed,
        msg: expect.stringContaining(`${ip} is in use by pod default/${by} on node node-b`),
      },
    });
    expect(await add('2001:db8:200::7')).toMatchObject(refusal('2001:db8:200::7', 'v6-primary'));
    // An IPv4-only pin, and the same IPv4 with another IPv6: the IPv4 is someone's secondary.
    expect(await add('198.51.100.9')).toMatchObject(refusal('198.51.100.9', 'v4-secondary'));
    expect(await add('2001:db8:200::99,198.51.100.9')).toMatchObject(
      refusal('198.51.100.9', 'v4-secondary'),
    );
    expect(await add('2001:db8:200:0::a')).toMatchObject(
      refusal('2001:db8:200::a', 'v6-secondary'),
    );
    expect(store.entries()).toEqual([]);
    expect(warnings.join()).toContain('FlockAddressRefused');
    // A terminated pod's addresses are free again.
    expect((await add('2001:db8:200::b,198.51.100.11')).ok).toBe(true);
    // Evicted from a dead node: being deleted, the address moves to its replacement.
    holder(
      'v4-secondary',
      ['2001:db8:101::1', '198.51.100.9'],
      'Running',
      new Date().toISOString(),
    );
    expect((await add('198.51.100.9')).ok).toBe(true);
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
    expect(warnings.pop()).toMatch(/^FlockCommunityRefused: .*allowedPodCommunities: 65000:666/);
    await refused('typo', tag('65000:66666'), /neither a standard community/);
    expect(warnings.pop()).toMatch(/^FlockCommunityRefused: /);
  });

  it('reports exhaustion with its own code and keeps nothing of the failed ADD', async () => {
    // A /30 IPv4 slice has two usable addresses (never the first or the last).
    const tiny = AddressAllocator.create({ cidr6: '2001:db8:100::/64', cidr4: '192.0.2.16/30' });
    if (!tiny.ok) throw new Error(tiny.error);
    node = { nodeConfig, allocator: tiny.value };
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

describe('CNI DEL, CHECK, GC, STATUS', () => {
  it('DEL removes everything and is idempotent, also without a netns', async () => {
    await handlers.handle(request('ADD'));
    expect(await handlers.handle(request('DEL'))).toEqual({ ok: true });
    expect(await handlers.handle(request('DEL', { netns: undefined }))).toEqual({ ok: true });
    expect(await handlers.handle(request('DEL', { containerID: 'never-added' }))).toEqual({
      ok: true,
    });
    expect(store.entries()).toEqual([]);
    expect(hostLinks()).toEqual([]);
    expect(node!.allocator.isQuarantined('2001:db8:100::1')).toBe(true);
    // The quarantine is in the store too, for the agent's next start.
    expect(store.released()).toEqual([
      expect.objectContaining({ ip: '2001:db8:100::1', pinned: false }),
      ...(node!.nodeConfig.spec.cidr4 ? [expect.objectContaining({ pinned: false })] : []),
    ]);
  });

  it('DEL of a known pod deletes its veth without reading it first (the store vouches for it)', async () => {
    await handlers.handle(request('ADD'));
    const reads = datapath.memory.reads;
    expect(await handlers.handle(request('DEL'))).toEqual({ ok: true });
    expect(datapath.memory.reads).toBe(reads);
    expect(hostLinks()).toEqual([]);
    // Unknown to the store: the veth's MAC is read before anything is deleted.
    expect(await handlers.handle(request('DEL', { containerID: 'never-added' }))).toEqual({
      ok: true,
    });
    expect(datapath.memory.reads).toBe(reads + 1);
  });

  it('CHECK passes on a healthy pod and reports a deleted route', async () => {
    await handlers.handle(request('ADD'));
    expect(await handlers.handle(request('CHECK'))).toEqual({ ok: true });
    const veth = hostVethName('c1', 'eth0');
    datapath.tamperHost([
      {
        op: 'route-del',
        step: 'host-routes',
        route: {
          dst: '2001:db8:100::1/128',
          type: 'unicast',
          proto: 241,
          nexthops: [{ dev: veth }],
        },
      },
    ]);
    const r = await handlers.handle(request('CHECK'));
    expect(r).toMatchObject({
      ok: false,
      error: { msg: expect.stringContaining('2001:db8:100::1') },
    });
    expect(await handlers.handle(request('CHECK', { containerID: 'unknown' }))).toMatchObject({
      ok: false,
      error: { code: CniErrorCode.UnknownContainer },
    });
  });

  it('GC removes attachments the runtime no longer lists', async () => {
    pods.set('default/other', pod('other'));
    await handlers.handle(request('ADD'));
    await handlers.handle(
      request('ADD', {
        containerID: 'c2',
        netns: datapath.createNetns('/var/run/netns/p2'),
        args: { K8S_POD_NAMESPACE: 'default', K8S_POD_NAME: 'other' },
      }),
    );
    const gc = request('GC', { containerID: undefined, ifName: undefined, netns: undefined });
    gc.config['cni.dev/valid-attachments'] = [{ containerID: 'c2', ifname: 'eth0' }];
    expect(await handlers.handle(gc)).toEqual({ ok: true });
    expect(store.entries().map((e) => e.containerID)).toEqual(['c2']);
    expect(hostLinks()).toEqual([hostVethName('c2', 'eth0')]);
  });

  it('GC also removes a flock veth that no allocation accounts for', async () => {
    const netns = datapath.createNetns('/var/run/netns/crashed');
    await datapath.setupPod({
      containerID: 'lost',
      ifName: 'eth0',
      netns,
      hostVeth: hostVethName('lost', 'eth0'),
      ip6: '2001:db8:100::99',
    });
    const gc = request('GC', { containerID: undefined, ifName: undefined, netns: undefined });
    gc.config['cni.dev/valid-attachments'] = [];
    expect(await handlers.handle(gc)).toEqual({ ok: true });
    expect(hostLinks()).toEqual([]);
  });

  it('STATUS is 50 until the node is ready', async () => {
    node = undefined;
    expect(handlers.status()).toMatchObject({ ok: false, error: { code: 50 } });
    make({ ready: () => false });
    expect(handlers.status()).toMatchObject({ ok: false, error: { code: 50 } });
  });
});

describe('undoIfUnchanged (the orphan sweep)', () => {
  it('removes the entry it was given, and nothing that replaced it', async () => {
    await handlers.handle(request('ADD'));
    const stale = store.get('c1', 'eth0')!;
    expect(
      await handlers.undoIfUnchanged({ ...stale, createdAt: '2000-01-01T00:00:00.000Z' }),
    ).toBe(false);
    expect(store.get('c1', 'eth0')).toBeDefined();
    expect(await handlers.undoIfUnchanged(stale)).toBe(true);
    expect(store.get('c1', 'eth0')).toBeUndefined();
    expect(await handlers.undoIfUnchanged(stale)).toBe(false);
  });
});
