import { CniErrorCode, silentLogger, type Pod } from '@flock/api';
import type { AllocationEntry } from '../store/index.js';
import { NAMESPACES, NETWORK_POLICIES, PODS, type KubeObject } from '@flock/kube';
import { FakeApiServer } from '@flock/kube/testing';
import { NftApplier } from '@flock/netpol';
import { eventually } from '@flock/testkit';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { hostVethName } from '../datapath/index.js';
import { policyCaches } from './caches.js';
import { PolicyReconciler, type PolicyReconcilerOptions } from './reconciler.js';
import type { PolicyResult } from './result.js';
import type { PolicyProblem } from './state.js';
import {
  RecordingNft,
  allowFrom,
  entry,
  hasPod,
  isolatedForIngress,
  namespace,
  networkPolicy,
  pod,
  startedPods,
  stopPods,
} from '../../testing/policy.js';

let api: FakeApiServer;
let nft: RecordingNft;
let entries: AllocationEntry[];
let fetched: Pod[];
let results: PolicyResult[];
let warnings: PolicyProblem[];
let reconciler: PolicyReconciler;
const veth = (name: string) => hostVethName(`ctr-${name}`, 'eth0');
const put = (ref: Parameters<FakeApiServer['putObject']>[0], obj: object) =>
  api.putObject(ref, obj as KubeObject);
/** Put a pod; its store entry carries the UID the API server gave it. */
function addPod(
  name: string,
  labels: Record<string, string>,
  ips: string[],
  ip6 = '',
): AllocationEntry {
  const uid = put(PODS, pod(name, labels, ips)).metadata.uid;
  return entry(name, ip6 || '2001:db8:1::99', { podUID: uid });
}
const settle = (ms = 150) => new Promise((r) => setTimeout(r, ms));

async function start(over: Partial<PolicyReconcilerOptions> = {}) {
  reconciler = new PolicyReconciler({
    caches: policyCaches(api, startedPods(api), silentLogger),
    store: { entries: () => entries },
    pods: {
      get: async (ns, name) =>
        fetched.find((p) => p.metadata.namespace === ns && p.metadata.name === name),
    },
    applier: new NftApplier(nft.run),
    logger: silentLogger,
    warn: (p) => warnings.push(p),
    debounceMs: 30,
    resyncMs: 60_000,
    ...over,
  });
  reconciler.onResult((r) => results.push(r));
  reconciler.start();
  await reconciler.waitForSync(5_000);
  await eventually('the first pass', () => reconciler.lastResult !== undefined);
}

beforeEach(() => {
  api = new FakeApiServer();
  put(NAMESPACES, namespace('shop'));
  nft = new RecordingNft();
  entries = [];
  fetched = [];
  results = [];
  warnings = [];
});
afterEach(async () => {
  await reconciler?.stop();
  await stopPods();
});

describe('PolicyReconciler', () => {
  it('applies once the caches have synced, with committed pods only', async () => {
    entries = [
      addPod('web', { app: 'web' }, ['2001:db8:1::5'], '2001:db8:1::5'),
      entry('half', '2001:db8:1::6', { state: 'pending' }),
    ];
    await start();
    expect(hasPod(nft.last, veth('web'))).toBe(true);
    expect(hasPod(nft.last, veth('half'))).toBe(false); // its ADD has not reached the policy step
    expect(results.at(-1)).toMatchObject({ ok: true, reason: 'Applied', pods: 1, rules: 0 });
  });

  it('re-applies on policy, pod and namespace changes', async () => {
    entries = [addPod('web', { app: 'web' }, ['2001:db8:1::5'], '2001:db8:1::5')];
    await start();
    put(NETWORK_POLICIES, allowFrom('shop/web', 'web', 'client'));
    await eventually('isolated', () => isolatedForIngress(nft.last, veth('web')));
    put(PODS, pod('client', { app: 'client' }, ['2001:db8:2::9']));
    await eventually('the new peer', () => nft.last.includes('2001:db8:2::9'));
    put(NETWORK_POLICIES, {
      ...networkPolicy('shop/web', {
        podSelector: { matchLabels: { app: 'web' } },
        ingress: [{ from: [{ namespaceSelector: { matchLabels: { team: 'a' } } }] }],
      }),
    });
    await eventually('no peer left', () => !nft.last.includes('2001:db8:2::9'));
    put(NAMESPACES, namespace('shop', { team: 'a' }));
    await eventually('peers from the labelled namespace', () => nft.last.includes('2001:db8:2::9'));
    api.deleteObject(NETWORK_POLICIES, 'web', 'shop');
    await eventually('open again', () => !isolatedForIngress(nft.last, veth('web')));
    // Isolating the pod only added its chain and map element: that went to nft as a diff.
    const diffs = nft.scripts.filter((s) => s.startsWith('# flock NetworkPolicy change'));
    expect(diffs).toContainEqual(
      expect.stringContaining(`elements = { "${veth('web')}" : jump ingress_${veth('web')} }`),
    );
  });

  it('debounces a burst of changes into one pass and skips nft when nothing changed', async () => {
    entries = [addPod('web', { app: 'web' }, [], '2001:db8:1::5')];
    // Peers appear in the table only as peers of an isolated pod.
    put(NETWORK_POLICIES, allowFrom('shop/web', 'web', 'x'));
    await start();
    const passes = reconciler.passes;
    for (let i = 0; i < 20; i++) put(PODS, pod(`p${i}`, { app: 'x' }, [`2001:db8:${i + 10}::1`]));
    await eventually('every pod', () => nft.last.includes('2001:db8:29::1'));
    await settle();
    expect(reconciler.passes - passes).toBeLessThanOrEqual(2);
    // A pod update that changes nothing policy reads (a status condition) costs no pass.
    const after = reconciler.passes;
    const p0 = pod('p0', { app: 'x' }, ['2001:db8:10::1']);
    put(PODS, { ...p0, status: { ...p0.status, conditions: [{ type: 'Ready', status: 'True' }] } });
    await settle();
    expect(reconciler.passes).toBe(after);
    // One that does (a label) costs one, and nft skips an unchanged script.
    const runs = nft.scripts.length;
    put(PODS, pod('p0', { app: 'x', tier: 'a' }, ['2001:db8:10::1']));
    await eventually('a pass', () => reconciler.passes === after + 1);
    expect(nft.scripts.length).toBe(runs);
  });

  it('beforeCommit applies synchronously with the pending pod included, looked up when the cache lacks it', async () => {
    put(NETWORK_POLICIES, allowFrom('shop/new', 'new', 'client'));
    await start({ debounceMs: 60_000 }); // only beforeCommit can apply now
    const pending = entry('new', '2001:db8:1::7', {
      state: 'pending',
      anycast: ['2001:db8:aa::1'],
    });
    entries = [pending];
    fetched = [pod('new', { app: 'new' }, [])];
    const count = nft.scripts.length;
    await reconciler.beforeCommit(pending);
    expect(nft.scripts.length).toBe(count + 1);
    expect(isolatedForIngress(nft.last, veth('new'))).toBe(true);
    expect(nft.last).toContain(`"${veth('new')}" . 2001:db8:aa::1`);
    // Until it commits, later passes keep it (they must not reopen the new pod).
    await reconciler.reconcile();
    expect(isolatedForIngress(nft.last, veth('new'))).toBe(true);
  });

  it('beforeCommit waits for a running apply: applies never overlap', async () => {
    entries = [addPod('web', { app: 'web' }, [], '2001:db8:1::5')];
    await start();
    let release!: () => void;
    nft.gate = new Promise((r) => (release = r));
    put(NETWORK_POLICIES, allowFrom('shop/web', 'web', 'client'));
    await eventually('an apply in progress', () => nft.running === 1);
    const pending = entry('new', '2001:db8:1::7', { state: 'pending' });
    entries = [...entries, pending];
    fetched = [pod('new', { app: 'new' }, [])];
    let done = false;
    const adding = reconciler.beforeCommit(pending).then(() => (done = true));
    await settle(50);
    expect(done).toBe(false);
    release();
    nft.gate = undefined;
    await adding;
    expect(nft.maxRunning).toBe(1);
    expect(hasPod(nft.last, veth('new'))).toBe(true);
    expect(isolatedForIngress(nft.last, veth('web'))).toBe(true);
  });

  it('concurrent beforeCommits behind a running apply share the next pass', async () => {
    await start({ debounceMs: 60_000 });
    let release!: () => void;
    nft.gate = new Promise((r) => (release = r));
    const first = entry('a', '2001:db8:1::a', { state: 'pending' });
    entries = [first];
    fetched = [pod('a', { app: 'a' }, [])];
    const running = reconciler.beforeCommit(first);
    await eventually('an apply in progress', () => nft.running === 1);
    const passes = reconciler.passes;
    const more = ['b', 'c', 'd'].map((n, i) =>
      entry(n, `2001:db8:1::${i + 11}`, { state: 'pending' }),
    );
    entries = [first, ...more];
    fetched = [...fetched, ...['b', 'c', 'd'].map((n) => pod(n, { app: n }, []))];
    const waiting = more.map((e) => reconciler.beforeCommit(e));
    await settle(50);
    release();
    nft.gate = undefined;
    await Promise.all([running, ...waiting]);
    expect(reconciler.passes - passes).toBe(1);
    for (const n of ['a', 'b', 'c', 'd']) expect(hasPod(nft.last, veth(n))).toBe(true);
  });

  it('a failed apply fails beforeCommit, reports ApplyFailed, and leaves the pod out of later passes', async () => {
    await start();
    const pending = entry('new', '2001:db8:1::7', { state: 'pending' });
    entries = [pending];
    fetched = [pod('new', { app: 'new' }, [])];
    nft.failWith = new Error('nft: Error: Could not process rule');
    await expect(reconciler.beforeCommit(pending)).rejects.toThrow(
      /NetworkPolicy for the new pod: nft: Error: Could not process rule/,
    );
    expect(results.at(-1)).toMatchObject({ ok: false, reason: 'ApplyFailed' });
    // The handlers undo the ADD; the entry stays pending in this test: it is not admitted again.
    nft.failWith = undefined;
    await reconciler.reconcile();
    expect(hasPod(nft.last, veth('new'))).toBe(false);
    expect(results.at(-1)).toMatchObject({ ok: true });
  });

  it('no pass before every cache synced; an ADD meanwhile is told to try again later', async () => {
    // Pods and namespaces sync, policies do not: a pass now would apply a table without them.
    put(NETWORK_POLICIES, allowFrom('shop/web', 'web', 'client'));
    api.inject((r) => (r.path.includes('networkpolicies') ? new Error('forbidden') : undefined));
    entries = [addPod('web', { app: 'web' }, [], '2001:db8:1::5')];
    reconciler = new PolicyReconciler({
      caches: policyCaches(api, startedPods(api), silentLogger),
      store: { entries: () => entries },
      pods: { get: async () => undefined },
      applier: new NftApplier(nft.run),
      logger: silentLogger,
      syncTimeoutMs: 100,
    });
    reconciler.start();
    reconciler.trigger();
    await expect(reconciler.beforeCommit(entry('new', '2001:db8:1::7'))).rejects.toMatchObject({
      code: CniErrorCode.TryAgainLater,
    });
    await reconciler.reconcile();
    await reconciler.resync();
    expect(nft.scripts).toEqual([]);
  });

  it('the self-heal pass re-applies an unchanged table', async () => {
    entries = [entry('web', '2001:db8:1::5')];
    await start();
    const count = nft.scripts.length;
    await reconciler.reconcile();
    expect(nft.scripts.length).toBe(count); // unchanged: skipped
    await reconciler.resync();
    expect(nft.scripts.length).toBe(count + 1);
    expect(nft.scripts.at(-1)).toBe(nft.scripts.at(-2)); // the whole table again, not a diff
  });

  it('the tick runs the self-heal pass', async () => {
    entries = [entry('web', '2001:db8:1::5')];
    await start({ resyncMs: 40 });
    const count = nft.scripts.length;
    await eventually('two ticks', () => nft.scripts.length >= count + 2);
  });

  it('an unenforceable policy: PolicyNotEnforceable, one Warning, its pod isolated; fixed: Applied', async () => {
    entries = [addPod('web', { app: 'web' }, [], '2001:db8:1::5')];
    await start();
    const values = Array.from({ length: 65 }, (_, i) => `v${i}`);
    put(
      NETWORK_POLICIES,
      networkPolicy('shop/bad', {
        podSelector: { matchLabels: { app: 'web' } },
        ingress: [
          { from: [{ podSelector: { matchExpressions: [{ key: 'a', operator: 'In', values }] } }] },
        ],
      }),
    );
    await eventually('reported', () => results.at(-1)?.reason === 'PolicyNotEnforceable');
    expect(results.at(-1)).toMatchObject({
      ok: false,
      message: expect.stringMatching(/shop\/bad/),
    });
    expect(isolatedForIngress(nft.last, veth('web'))).toBe(true);
    await reconciler.resync();
    await reconciler.resync();
    expect(warnings.map((w) => w.name)).toEqual(['bad']);
    put(NETWORK_POLICIES, allowFrom('shop/bad', 'web', 'client'));
    await eventually('fixed', () => results.at(-1)?.reason === 'Applied');
    expect(warnings).toHaveLength(1);
  });

  it('over the limits: an over-size policy isolates its pods, an over-limit pod is isolated; each told by a Warning', async () => {
    const many = Object.fromEntries(Array.from({ length: 65 }, (_, i) => [`l${i}`, 'v']));
    entries = [
      addPod('web', { app: 'web' }, [], '2001:db8:1::5'),
      addPod('big', { app: 'big', ...many }, [], '2001:db8:1::6'),
    ];
    const from = Array.from({ length: 3000 }, (_, i) => ({
      ipBlock: { cidr: `2001:db8:${i.toString(16)}::/48` },
    }));
    put(
      NETWORK_POLICIES,
      networkPolicy('shop/huge', {
        podSelector: { matchLabels: { app: 'web' } },
        ingress: [{ from }],
      }),
    );
    await start();
    expect(warnings.map((w) => [w.kind ?? 'NetworkPolicy', w.name, w.reason])).toEqual([
      ['Pod', 'big', 'PodOverLimit'],
      ['NetworkPolicy', 'huge', 'PolicyOverLimit'],
    ]);
    expect(results.at(-1)).toMatchObject({ ok: false, reason: 'PolicyNotEnforceable' });
    expect(isolatedForIngress(nft.last, veth('web'))).toBe(true);
    expect(isolatedForIngress(nft.last, veth('big'))).toBe(true);
    expect(nft.last).toContain(`"${veth('big')}" : jump egress_${veth('big')}`);
  });

  it('a deleted pod keeps its labels until its attachment goes; an unknown one is isolated', async () => {
    put(
      NETWORK_POLICIES,
      networkPolicy('shop/open', { podSelector: { matchLabels: { app: 'other' } } }),
    );
    entries = [addPod('web', { app: 'web' }, [], '2001:db8:1::5')];
    await start();
    expect(isolatedForIngress(nft.last, veth('web'))).toBe(false);
    api.deleteObject(PODS, 'web', 'shop');
    reconciler.trigger();
    await settle();
    expect(isolatedForIngress(nft.last, veth('web'))).toBe(false);
    expect(results.at(-1)?.message).not.toMatch(/isolated until/);
    // A restarted agent has never seen it: isolated, and said so.
    await reconciler.stop();
    await start();
    expect(isolatedForIngress(nft.last, veth('web'))).toBe(true);
    expect(results.at(-1)?.message).toMatch(/isolated until their Pod is known again: shop\/web/);
  });
});
