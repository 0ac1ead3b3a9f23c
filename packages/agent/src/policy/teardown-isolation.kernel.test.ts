// Issue 38 item 6 with real packets, IPv4 and IPv6: a DEL whose teardown fails after the entry
// was marked (`removing`, the veth still there) leaves the pod isolated both ways, its
// anti-spoofing intact, until the orphan sweep's retry deletes the veth and the entry; then the
// table no longer names it. All of it is the agent's own code: pods wired by IprouteDatapath in
// a node namespace, DEL by CniHandlers and the retry by OrphanSweeper over a real
// AllocationStore, the table built by PolicyReconciler (store entries → buildPolicyState →
// translate → render) and applied by nft in the node namespace.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { silentLogger, type Pod } from '@flock/api';
import { run } from '@flock/exec';
import { NAMESPACES, PODS, type Cache } from '@flock/kube';
import { FakeApiServer } from '@flock/kube/testing';
import { requireKernelTier, type Netns } from '@flock/testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CniHandlers } from '../cni/handlers.js';
import { OrphanSweeper } from '../cni/orphan-sweep.js';
import { hostVethName, type Runner } from '../datapath/index.js';
import { AllocationStore } from '../store/index.js';
import { testClaims } from '../../testing/claims.js';
import { KernelHarness } from '../../testing/datapath/harness.js';
import { hostPort } from '../../testing/datapath/probes.js';
import { isolatedForIngress, namespace, pod, startedPods, stopPods } from '../../testing/policy.js';
import { policyCaches } from './caches.js';
import { nftPolicyApplier } from './nft.js';
import { PolicyReconciler } from './reconciler.js';

type Family = 4 | 6;
const FAMILIES: Family[] = [4, 6];
/** Where each pod's UDP receiver listens; CLOSED: no one (the pod answers port unreachable). */
const PORT = 9000;
const CLOSED = 9;
/** The node's own addresses (KernelHarness puts them on its lo). */
const NODE = { 4: '10.255.0.1', 6: '2001:db8:ffff::1' } as const;
/** An address of the pod range that nobody holds: the marked pod forges it. */
const FORGED = { 4: '192.0.2.99', 6: '2001:db8:100::99' } as const;
/** How long a datagram that should arrive may take (a dropped one is waited for as long). */
const DELIVERY_MS = 1_500;

interface TestPod {
  name: string;
  containerID: string;
  ns: Netns;
  veth: string;
  mac: string;
  ip: Record<Family, string>;
  /** What its UDP receiver got so far (one token a line). */
  received: string;
}

let h: KernelHarness;
let dir: string;
let store: AllocationStore;
let api: FakeApiServer;
let pods: Cache<Pod>;
let reconciler: PolicyReconciler;
let handlers: CniHandlers;
let marked: TestPod;
let peer: TestPod;
/** While set, every `ip` the datapath runs fails (a teardown that fails before any change). */
let ipFails = false;
const runner: Runner = (file, args, options) =>
  ipFails ? Promise.reject(new Error('injected: ip could not run')) : run(file, args, options);

let sourcePort = 20_000;
let tokens = 0;
/** A fresh source port for each probe: no conntrack entry of an earlier probe matches it. */
const bound = (source: string) => hostPort(source, ++sourcePort);
const family = (ip: string): Family => (ip.includes(':') ? 6 : 4);
const table = async () =>
  (await h.node.exec('nft', ['list', 'table', 'inet', 'flock'], { okCodes: [0, 1] })).stdout;

/** Wire a pod as ADD does: pending entry, datapath, commit; its Pod known to the API server. */
async function addPod(name: string, n: number): Promise<TestPod> {
  const containerID = `k-${name}`;
  const ns = await h.newPod();
  // The pod answers every probe with its ICMP errors (no rate limit in its namespace).
  await ns.exec('sysctl', ['-q', '-w', 'net.ipv4.icmp_ratelimit=0', 'net.ipv6.icmp.ratelimit=0']);
  const ip = { 4: `192.0.2.${n}`, 6: `2001:db8:100::${n}` };
  const { metadata } = api.putObject(PODS, pod(name, { app: name }, [ip[6], ip[4]]));
  await store.putPending({
    containerID,
    ifname: 'eth0',
    namespace: 'shop',
    pod: name,
    podUID: metadata.uid,
    ip6: ip[6],
    ip4: ip[4],
    pinned: false,
    anycast: [],
  });
  const veth = hostVethName(containerID, 'eth0');
  const wired = await h.datapath.setupPod({
    containerID,
    ifName: 'eth0',
    netns: ns.path,
    hostVeth: veth,
    ip6: ip[6],
    ip4: ip[4],
  });
  await store.commit(containerID, 'eth0');
  const p: TestPod = { name, containerID, ns, veth, mac: wired.podMac, ip, received: '' };
  const receiver = ns.spawn('socat', ['-u', `UDP6-RECV:${PORT}`, 'STDOUT']);
  receiver.stdout?.on('data', (d: Buffer) => (p.received += d.toString()));
  for (let waited = 0; ; waited += 20) {
    const { stdout } = await ns.exec('ss', ['-Hlun', `sport = :${PORT}`]);
    if (stdout.trim()) break;
    if (waited > 5_000) throw new Error(`the UDP receiver of ${name} did not start`);
    await new Promise((r) => setTimeout(r, 20));
  }
  return p;
}

interface Datagram {
  label: string;
  from: Netns;
  /** Source address (bound: a forged one is sent as it is). */
  source: string;
  to: TestPod;
}

/** Send each datagram (a token of its own); which of them arrived, by label. */
async function delivered(datagrams: Datagram[]): Promise<Record<string, boolean>> {
  const sent: { label: string; to: TestPod; token: string }[] = [];
  for (const d of datagrams) {
    const token = `token-${++tokens}`;
    const dst = d.to.ip[family(d.source)];
    await d.from.exec(
      'socat',
      ['-u', '-', `UDP${family(dst)}-SENDTO:${hostPort(dst, PORT)},bind=${bound(d.source)}`],
      { input: `${token}\n` },
    );
    sent.push({ label: d.label, to: d.to, token });
  }
  const arrived = () => sent.filter((s) => s.to.received.split('\n').includes(s.token));
  const deadline = Date.now() + DELIVERY_MS;
  while (arrived().length < sent.length && Date.now() < deadline)
    await new Promise((r) => setTimeout(r, 20));
  const got = new Set(arrived());
  return Object.fromEntries(sent.map((s) => [s.label, got.has(s)]));
}

/** marked ↔ peer, both ways, both families. */
const betweenPods = (): Datagram[] =>
  FAMILIES.flatMap((f) => [
    { label: `IPv${f} marked → peer`, from: marked.ns, source: marked.ip[f], to: peer },
    { label: `IPv${f} peer → marked`, from: peer.ns, source: peer.ip[f], to: marked },
  ]);

/**
 * The node sends a datagram to a closed port of `target` (an address of the marked pod's, or
 * one it forges, routed to its veth); does the pod's ICMP port unreachable, sent from `target`,
 * come back? ICMP errors pass flock's table before any policy (a pod's isolation included):
 * only anti-spoofing drops the forged one.
 */
async function icmpErrorArrives(target: string): Promise<boolean> {
  const f = family(target);
  const { stderr } = await h.node.exec(
    'socat',
    ['-T2', '-t1', '-', `UDP${f}:${hostPort(target, CLOSED)},bind=${bound(NODE[f])}`],
    { input: 'x', okCodes: [0, 1] },
  );
  return stderr.includes('Connection refused');
}

/** Own and forged source of the marked pod's ICMP errors, both families: which arrived. */
async function icmpErrors(): Promise<Record<string, boolean>> {
  const out: Record<string, boolean> = {};
  for (const f of FAMILIES) {
    out[`IPv${f} own source`] = await icmpErrorArrives(marked.ip[f]);
    out[`IPv${f} forged source`] = await icmpErrorArrives(FORGED[f]);
  }
  return out;
}

beforeAll(async () => {
  requireKernelTier('nft', 'nsenter', 'socat', 'ss', 'sysctl');
  h = await KernelHarness.create(runner);
  dir = await mkdtemp(join(tmpdir(), 'flock-teardown-'));
  store = new AllocationStore(join(dir, 'store.json'));
  await store.load();
  api = new FakeApiServer();
  api.putObject(NAMESPACES, namespace('shop'));
  marked = await addPod('marked', 21);
  peer = await addPod('peer', 22);
  // The marked pod also holds the forged addresses, and the node routes them to its veth (a
  // neighbour entry of its own: the forged address's neighbour advertisement is dropped too).
  for (const f of FAMILIES) {
    await marked.ns.exec('ip', [
      'addr',
      'add',
      FORGED[f],
      'dev',
      'eth0',
      ...(f === 6 ? ['nodad'] : []),
    ]);
    await h.node.exec('ip', ['route', 'add', FORGED[f], 'dev', marked.veth]);
    await h.node.exec('ip', [
      'neigh',
      'replace',
      FORGED[f],
      'lladdr',
      marked.mac,
      'dev',
      marked.veth,
      'nud',
      'permanent',
    ]);
  }
  pods = startedPods(api);
  reconciler = new PolicyReconciler({
    caches: policyCaches(api, pods, silentLogger),
    store,
    pods: { get: async () => undefined },
    applier: nftPolicyApplier(h.node.path),
    logger: silentLogger,
    resyncMs: 600_000,
  });
  handlers = new CniHandlers({
    store,
    datapath: h.datapath,
    node: () => undefined,
    pods: { get: async () => undefined },
    claims: testClaims({ api }),
    logger: silentLogger,
  });
});

afterAll(async () => {
  await reconciler?.stop();
  await stopPods();
  await h?.destroy();
  if (dir) await rm(dir, { recursive: true, force: true });
});

describe('a pod whose teardown failed (its entry marked removing) stays isolated (kernel)', () => {
  it('without flock’s table the forged source gets through (the probe can see spoofing)', async () => {
    expect(await table()).toBe('');
    expect(await icmpErrors()).toEqual({
      'IPv4 own source': true,
      'IPv4 forged source': true,
      'IPv6 own source': true,
      'IPv6 forged source': true,
    });
  });

  it('both pods committed, no policy: traffic passes both ways; the forged source is dropped', async () => {
    reconciler.start(); // its first pass, once the caches have synced, applies the table
    expect(await reconciler.waitForSync(5_000)).toBe(true);
    expect((await reconciler.reconcile())?.ok).toBe(true);
    expect(await delivered(betweenPods())).toEqual({
      'IPv4 marked → peer': true,
      'IPv4 peer → marked': true,
      'IPv6 marked → peer': true,
      'IPv6 peer → marked': true,
    });
    expect(await icmpErrors()).toEqual({
      'IPv4 own source': true,
      'IPv4 forged source': false,
      'IPv6 own source': true,
      'IPv6 forged source': false,
    });
  });

  it('a DEL whose teardown fails leaves it marked: isolated both ways, anti-spoofing intact', async () => {
    ipFails = true;
    try {
      const res = await handlers.handle({
        command: 'DEL',
        containerID: marked.containerID,
        ifName: 'eth0',
        netns: marked.ns.path,
        args: { K8S_POD_NAMESPACE: 'shop', K8S_POD_NAME: marked.name },
        config: { cniVersion: '1.1.0', name: 'flock', type: 'flock' },
      });
      expect(res.ok).toBe(false);
    } finally {
      ipFails = false;
    }
    expect(store.get(marked.containerID, 'eth0')).toMatchObject({
      state: 'pending',
      removing: true,
    });
    await h.node.exec('ip', ['link', 'show', 'dev', marked.veth]); // its veth is still there
    // Its Pod is still known (the API server has it, unchanged): only the mark isolates it.
    expect(pods.getObject(marked.name, 'shop')).toBeDefined();
    expect((await reconciler.reconcile())?.ok).toBe(true);
    expect(isolatedForIngress(await table(), marked.veth)).toBe(true);
    expect(await delivered(betweenPods())).toEqual({
      'IPv4 marked → peer': false,
      'IPv4 peer → marked': false,
      'IPv6 marked → peer': false,
      'IPv6 peer → marked': false,
    });
    // ICMP errors pass isolation: its own source still does, the forged one is dropped.
    expect(await icmpErrors()).toEqual({
      'IPv4 own source': true,
      'IPv4 forged source': false,
      'IPv6 own source': true,
      'IPv6 forged source': false,
    });
    // The peer is untouched: the node still reaches it.
    expect(
      await delivered(
        FAMILIES.map((f) => ({
          label: `IPv${f} node → peer`,
          from: h.node,
          source: NODE[f],
          to: peer,
        })),
      ),
    ).toEqual({ 'IPv4 node → peer': true, 'IPv6 node → peer': true });
  });

  it('the sweep retries the teardown: veth and entry gone, the table no longer names it', async () => {
    const sweeper = new OrphanSweeper({
      entries: () => store.entries(),
      current: (e) => store.get(e.containerID, e.ifname),
      podOf: (ns, name) => pods.getObject(name, ns),
      fetchPod: () => Promise.reject(new Error('not asked: both pods are live')),
      undo: async (e) => void (await handlers.undoIfUnchanged(e)),
      graceMs: 0,
      logger: silentLogger,
    });
    const result = await sweeper.sweep('test');
    expect(result.removed.map((r) => [r.entry.pod, r.reason])).toEqual([
      ['marked', 'teardown-retry'],
    ]);
    expect(result.errors).toBe(0);
    expect(store.entries().map((e) => e.pod)).toEqual(['peer']);
    const links = await h.node.exec('ip', ['link', 'show', 'dev', marked.veth], {
      okCodes: [0, 1],
    });
    expect(links.code).toBe(1); // the veth is gone
    expect((await reconciler.reconcile())?.ok).toBe(true);
    const listed = await table();
    for (const name of [marked.veth, marked.ip[4], marked.ip[6]])
      expect(listed).not.toContain(name);
    expect(listed).toContain(`"${peer.veth}"`);
  });
});
