// The routing side against the real things: the announcer driving a real BIRD in a node
// namespace that peers with a router namespace (TestRouter), FakeBird held to the real BIRD's
// behaviour, and the anycast reconciler on the real kernel.
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  BirdClient,
  BirdUnavailableError,
  announcedPrefixes,
  renderBirdConfig,
  type BirdControl,
  type BirdModel,
} from '@flock/bird';
import { createMemoryLogger } from '@flock/kube/testing';
import { Netns, eventually, requireKernelTier } from '@flock/testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { hostVethName } from '../datapath/index.js';
import { KernelHarness } from '../../testing/datapath/harness.js';
import { recordingRunner } from '../../testing/datapath/probes.js';
import { FakeBird } from '../../testing/fake-bird.js';
import { TestRouter, nodeBirdPaths, startNodeBird, type BirdProcess } from '@flock/bird/testing';
import { AnycastReconciler } from './anycast-reconciler.js';
import { BirdAnnouncer } from './announcer.js';
import { bgpPeerStatuses } from '../node-status/status-compute.js';
import { birdControls } from './wiring.js';

const NODE_AS = 64512;
const ROUTER_AS = 65000;
const model = (over: Partial<BirdModel> = {}): BirdModel => ({
  routerId: '10.0.0.10',
  asn: NODE_AS,
  peers: [{ address: '2001:db8:ffff::1', asn: ROUTER_AS }],
  aggregates: ['2001:db8:100::/64', '192.0.2.16/28'],
  pinned: ['2001:db8:200::7'],
  anycast: ['2001:db8:300::1'],
  ...over,
});
const same = (a: string[], b: string[]) => JSON.stringify(a) === JSON.stringify(b);
const prefixes = (m: BirdModel) => {
  const p = announcedPrefixes(m);
  return [...p[6], ...p[4]].sort();
};

describe('announcements through a real BIRD to a router (kernel)', () => {
  let dir: string;
  let node: Netns;
  let router: TestRouter;
  let nodeBird: BirdProcess | undefined;
  let announcer: BirdAnnouncer | undefined;

  beforeAll(async () => {
    requireKernelTier('bird');
    dir = await mkdtemp(join(tmpdir(), 'flock-routing-k-'));
    node = await Netns.create('rtnode');
    router = await TestRouter.create({ node, dir, routerAs: ROUTER_AS, nodeAs: NODE_AS });
    await router.startBird();
  });
  afterAll(async () => {
    await announcer?.close();
    await nodeBird?.stop();
    await router?.destroy();
    await node?.destroy();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it('a BIRD started 10 s after the agent rendered is reloaded within 1 s; the router learns aggregates, host routes and anycast', async () => {
    const paths = nodeBirdPaths(dir);
    // The agent's own clients and retry settings.
    announcer = new BirdAnnouncer({
      configPath: paths.configPath,
      control: birdControls(paths.socketPath).reload,
      logger: createMemoryLogger(),
    });
    announcer.announce(model());
    await eventually('unreachable', () => announcer!.state.status === 'unreachable');
    expect(await readFile(paths.configPath, 'utf8')).toBe(renderBirdConfig(model()));
    await new Promise((r) => setTimeout(r, 10_000)); // a 1 → 10 s backoff would be at 8 s
    nodeBird = await startNodeBird(node, paths); // resolves once BIRD answers on its socket
    const up = Date.now();
    await eventually('applied', () => announcer!.state.status === 'applied', {
      timeoutMs: 10_000,
      intervalMs: 20,
    });
    expect(Date.now() - up).toBeLessThanOrEqual(1_000);
    const want = prefixes(model());
    expect(await router.waitFor((l) => same(l, want), 60_000)).toEqual(want);

    announcer.announce(model({ pinned: [], anycast: [] }));
    const aggregates = ['192.0.2.16/28', '2001:db8:100::/64'];
    expect(await router.waitFor((l) => same(l, aggregates), 10_000)).toEqual(aggregates);
  });

  it('BGP state read from the real BIRD goes into status: Established, then not when the router stops', async () => {
    const status = birdControls(nodeBirdPaths(dir).socketPath).status;
    const peers = model().peers;
    const state = async () =>
      bgpPeerStatuses({
        configuredPeers: peers,
        peers,
        peerProblems: [],
        bgp: { protocols: await status.showProtocolsAll() },
      } as never)[0]?.state;
    expect(await eventually('Established', async () => (await state()) === 'Established')).toBe(
      true,
    );
    await router.stopBird();
    expect(
      await eventually('not Established', async () => {
        const s = await state();
        return s !== 'Established' ? s : undefined;
      }),
    ).toMatch(/Active|Connect|Idle|Down|OpenSent/);
    await router.startBird();
    await eventually('Established again', async () => (await state()) === 'Established', {
      timeoutMs: 90_000,
    });
  }, 150_000);
});

describe('FakeBird behaves like BIRD behind BirdClient (kernel)', () => {
  let dir: string;
  let ns: Netns;
  let real: BirdProcess | undefined;

  beforeAll(async () => {
    requireKernelTier('bird');
    dir = await mkdtemp(join(tmpdir(), 'flock-fakebird-k-'));
    ns = await Netns.create('fbird');
  });
  afterAll(async () => {
    await real?.stop();
    await ns?.destroy();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  async function contract(control: BirdControl, start: () => Promise<void>, configPath: string) {
    const { writeFile } = await import('node:fs/promises');
    const observed: unknown[] = [];
    const outcome = (p: Promise<unknown>) =>
      p.then(
        () => 'ok',
        (e: unknown) => (e instanceof BirdUnavailableError ? 'unavailable' : String(e)),
      );
    observed.push(await outcome(control.configure()));
    observed.push(await outcome(control.showProtocolsAll()));
    await writeFile(configPath, renderBirdConfig(model()), { mode: 0o600 });
    await start();
    observed.push(await outcome(control.configure()));
    const names = (await control.showProtocolsAll())
      .filter((p) => p.proto === 'BGP')
      .map((p) => p.name);
    observed.push(names);
    await writeFile(configPath, renderBirdConfig(model({ peers: [] })), { mode: 0o600 });
    observed.push(await outcome(control.configure()));
    observed.push((await control.showProtocolsAll()).filter((p) => p.proto === 'BGP').length);
    return observed;
  }

  it('unavailable while down, reads its file at start and on configure, one BGP protocol per peer', async () => {
    const fakePath = join(dir, 'fake.conf');
    const fake = new FakeBird(fakePath);
    const fromFake = await contract(fake, () => fake.start(), fakePath);
    const paths = nodeBirdPaths(dir);
    const client = new BirdClient({ socketPath: paths.socketPath, attempts: 1 });
    const fromReal = await contract(
      client,
      async () => void (real = await startNodeBird(ns, paths)),
      paths.configPath,
    );
    expect(fromFake).toEqual([
      'unavailable',
      'unavailable',
      'ok',
      ['peer_2001_db8_ffff__1'],
      'ok',
      0,
    ]);
    expect(fromReal).toEqual(fromFake);
  });
});

describe('anycast reconciler on the real kernel', () => {
  let h: KernelHarness | undefined;
  afterAll(async () => h?.destroy());

  it('multipath over two pods, one, none; a quiet pass runs no write command', async () => {
    requireKernelTier('nsenter');
    const rec = recordingRunner();
    h = await KernelHarness.create(rec.runner);
    const veths: string[] = [];
    for (const [n, id] of [
      [1, 'c-any-a'],
      [2, 'c-any-b'],
    ] as const) {
      const netns = await h.newPodNetns();
      await h.datapath.setupPod({
        containerID: id,
        ifName: 'eth0',
        netns,
        hostVeth: hostVethName(id, 'eth0'),
        ip6: `2001:db8:100::${n}`,
        anycast: ['2001:db8:300::1'],
      });
      veths.push(hostVethName(id, 'eth0'));
    }
    let desired = new Map([['2001:db8:300::1', veths]]);
    const r = new AnycastReconciler({
      datapath: h.datapath,
      desired: () => desired,
      logger: createMemoryLogger(),
    });
    await r.reconcile();
    const route = async () =>
      JSON.parse(
        (await h!.node.exec('ip', ['-j', '-6', 'route', 'show', '2001:db8:300::1', 'proto', '242']))
          .stdout,
      ) as { nexthops?: { gateway: string }[]; gateway?: string }[];
    expect((await route())[0]?.nexthops?.map((x) => x.gateway).sort()).toEqual([
      '2001:db8:100::1',
      '2001:db8:100::2',
    ]);
    const writes = rec.writes().length;
    expect(await r.reconcile()).toEqual({ changed: [], failed: [] });
    expect(rec.writes()).toHaveLength(writes);

    desired = new Map([['2001:db8:300::1', [veths[1]!]]]);
    await r.reconcile();
    expect((await route())[0]).toMatchObject({ gateway: '2001:db8:100::2' });
    desired = new Map();
    await r.reconcile();
    expect(await route()).toEqual([]);
  });
});
