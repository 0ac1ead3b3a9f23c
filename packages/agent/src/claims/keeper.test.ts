// The keeper on the in-memory API server with the agent's real caches: adoption after an
// upgrade, conflicts told once, releases and leaves when a pod's attachment is gone, the
// withdrawal mark of a terminating holder, and addresses an ADD holds left alone.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { claimName, type AddressClaim, type Pod } from '@flock/api';
import { pod } from '@flock/api/testing';
import { ADDRESSCLAIMS, PODS, type Cache } from '@flock/kube';
import { FakeApiServer, createMemoryLogger } from '@flock/kube/testing';
import { eventually } from '@flock/testkit';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { testClaims } from '../../testing/claims.js';
import { NODE_CONFIG, entry } from '../../testing/routing-fixtures.js';
import { clusterPodCache, nodePods } from '../node/pods.js';
import { AllocationStore, type AllocationEntry } from '../store/index.js';
import { claimCache } from './cache.js';
import { ClaimKeeper } from './keeper.js';

const PINNED = '2001:db8:200::7';
const ANYCAST = '2001:db8:300::1';

let dir: string;
let api: FakeApiServer;
let store: AllocationStore;
let allPods: Cache<Pod>;
let claims: Cache<AddressClaim>;
let keeper: ClaimKeeper;
let told: string[];

const claim = (address: string) => api.getObject<AddressClaim>(ADDRESSCLAIMS, claimName(address));
const putPod = (name: string, over: Parameters<typeof pod>[0] = {}) =>
  api.putObject(PODS, pod({ name, ...over })).metadata.uid;

async function commit(e: AllocationEntry): Promise<void> {
  const { state: _s, createdAt: _c, ...rest } = e;
  await store.putPending(rest);
  await store.commit(e.containerID, e.ifname);
}

async function start(): Promise<void> {
  allPods = clusterPodCache(api, createMemoryLogger());
  claims = claimCache(api, createMemoryLogger());
  allPods.start();
  claims.start();
  keeper = new ClaimKeeper({
    nodeName: 'node-a',
    store,
    pods: nodePods(allPods, 'node-a'),
    claims,
    book: testClaims({ api }).book,
    nodeConfig: { current: () => ({ nodeConfig: NODE_CONFIG, allocator: undefined as never }) },
    periodMs: 60_000,
    logger: createMemoryLogger(),
    warn: (p, reason, note) => told.push(`${p.metadata.name} ${reason}: ${note}`),
  });
  await keeper.start();
  await keeper.firstPass();
}

beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'flock-keeper-'));
  api = new FakeApiServer();
  store = new AllocationStore(join(dir, 'allocations.json'));
  await store.load();
  told = [];
});
afterEach(async () => {
  await keeper?.stop();
  await allPods?.stop();
  await claims?.stop();
  await rm(dir, { recursive: true, force: true });
});

describe('claim keeper', () => {
  it('claims what live local pods held before claims existed (the upgrade), and nothing else', async () => {
    const web = putPod('web');
    const dns = putPod('dns');
    const gone = 'uid-of-a-deleted-pod';
    await commit(entry('web', { podUID: web, ip6: PINNED, pinned: true }));
    await commit(entry('dns', { podUID: dns, ip6: '2001:db8:100::5', anycast: [ANYCAST] }));
    await commit(entry('gone', { podUID: gone, ip6: '2001:db8:200::8', pinned: true }));
    await start();
    expect(claim(PINNED)?.spec).toEqual({
      address: PINNED,
      kind: 'Pinned',
      namespace: 'default',
      key: 'Deployment/app',
      holders: [{ node: 'node-a', pod: 'web', uid: web }],
    });
    expect(claim(ANYCAST)?.spec).toMatchObject({
      kind: 'Anycast',
      key: 'Deployment/app',
      holders: [{ node: 'node-a' }],
    });
    expect(claim('2001:db8:200::8')).toBeUndefined();
    expect(keeper.conflicts()).toEqual([]);
  });

  it('reports a second holder as a conflict, tells it once, and never takes the address from the first', async () => {
    const first = putPod('first', { nodeName: 'node-b' });
    await testClaims({ api, nodeName: 'node-b' }).book.claimPinned(PINNED, {
      namespace: 'default',
      key: 'Deployment/app',
      pod: 'first',
      uid: first,
    });
    const second = putPod('second');
    await commit(entry('second', { podUID: second, ip6: PINNED, pinned: true }));
    await start();
    expect(keeper.conflicts()).toEqual([
      {
        address: PINNED,
        namespace: 'default',
        pod: 'second',
        why: expect.stringContaining('held by pod first, which is not being deleted'),
      },
    ]);
    keeper.trigger();
    await new Promise((r) => setTimeout(r, 150));
    expect(told).toHaveLength(1);
    expect(told[0]).toMatch(/^second FlockClaimConflict: /);
    expect(claim(PINNED)?.spec.holders[0]?.pod).toBe('first');
  });

  it('releases a pinned claim whose attachment and pod are gone; leaves an anycast group it has no member of', async () => {
    const web = putPod('web');
    const dns = putPod('dns');
    await commit(entry('web', { podUID: web, ip6: PINNED, pinned: true }));
    await commit(entry('dns', { podUID: dns, ip6: '2001:db8:100::5', anycast: [ANYCAST] }));
    await start();
    expect(claim(PINNED)).toBeDefined();
    // The pods go (DEL removed their entries).
    api.deleteObject(PODS, 'web', 'default');
    await store.remove('c-web', 'eth0');
    await store.remove('c-dns', 'eth0');
    keeper.trigger();
    await eventually('released and left', () => !claim(PINNED) && !claim(ANYCAST));
  });

  it('keeps a claim whose pod lives on while its sandbox is being re-created', async () => {
    const web = putPod('web');
    await commit(entry('web', { podUID: web, ip6: PINNED, pinned: true }));
    await start();
    await store.remove('c-web', 'eth0'); // DEL of the old sandbox; the pod stays
    keeper.trigger();
    await new Promise((r) => setTimeout(r, 200));
    expect(claim(PINNED)?.spec.holders[0]?.uid).toBe(web);
  });

  it('marks a terminating holder withdrawn once BIRD runs a model without its address', async () => {
    const web = putPod('web');
    await commit(entry('web', { podUID: web, ip6: PINNED, pinned: true }));
    await start();
    keeper.setAnnounced([PINNED]);
    putPod('web', { terminating: true });
    await new Promise((r) => setTimeout(r, 200));
    expect(claim(PINNED)?.spec.holders[0]?.withdrawn).toBeUndefined();
    keeper.setAnnounced([]);
    await eventually('withdrawn', () => claim(PINNED)?.spec.holders[0]?.withdrawn === true);
  });

  it("marks a terminating holder withdrawn while its replacement's ADD on this node holds the address (the ADD waits for that mark)", async () => {
    const web = putPod('web');
    await commit(entry('web', { podUID: web, ip6: PINNED, pinned: true }));
    await start();
    keeper.setAnnounced([PINNED]);
    const done = keeper.hold([PINNED]);
    try {
      putPod('web', { terminating: true });
      keeper.setAnnounced([]);
      await eventually('withdrawn', () => claim(PINNED)?.spec.holders[0]?.withdrawn === true);
    } finally {
      done();
    }
  });

  it('leaves an address alone while an ADD holds it', async () => {
    const dns = putPod('dns');
    await start();
    const done = keeper.hold([ANYCAST]);
    await testClaims({ api }).book.joinAnycast(ANYCAST, {
      namespace: 'default',
      key: 'Deployment/app',
    });
    keeper.trigger();
    await new Promise((r) => setTimeout(r, 200));
    expect(claim(ANYCAST)).toBeDefined(); // no member committed yet, but the ADD holds it
    await commit(entry('dns', { podUID: dns, ip6: '2001:db8:100::5', anycast: [ANYCAST] }));
    done();
    await new Promise((r) => setTimeout(r, 200));
    expect(claim(ANYCAST)?.spec.holders).toEqual([{ node: 'node-a' }]);
  });
});
