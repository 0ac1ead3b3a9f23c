// Before this node's pod cache has synced nothing is announced, routed or swept: an empty cache
// would otherwise look like "every pod is gone" at each agent restart.
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { AllocationStore } from '../store/index.js';
import { NODECONFIGS } from '@flock/kube';
import { FakeApiServer, createMemoryLogger } from '@flock/kube/testing';
import { eventually } from '@flock/testkit';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { hostVethName } from '../datapath/index.js';
import { FakeDatapath } from '../../testing/datapath/fake.js';
import { NodeConfigTracker } from '../node/node-config.js';
import { clusterPodCache, nodePods } from '../node/pods.js';
import { FakeBird } from '../../testing/fake-bird.js';
import { NODE_CONFIG, claimsFor } from '../../testing/routing-fixtures.js';
import { OrphanSweep } from '../cni/orphan-sweep.js';
import { Routing } from './routing.js';

let dir: string;
let routing: Routing | undefined;
const stops: (() => Promise<void>)[] = [];

beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'flock-routing-sync-'));
});
afterEach(async () => {
  await routing?.stop();
  for (const s of stops.splice(0)) await s();
  await rm(dir, { recursive: true, force: true });
});

describe('routing before the pod cache has synced', () => {
  it('announces, routes and sweeps nothing until the cache syncs, then does all three', async () => {
    const api = new FakeApiServer();
    api.putObject(NODECONFIGS, NODE_CONFIG);
    const heal = api.inject((r) =>
      r.method === 'GET' && r.path === '/api/v1/pods'
        ? new Error('connect ECONNREFUSED')
        : undefined,
    );
    const logger = createMemoryLogger();
    const nodeConfig = new NodeConfigTracker({
      transport: api,
      nodeName: 'node-a',
      logger,
      addressQuarantineMs: 0,
    });
    nodeConfig.start();
    stops.push(() => nodeConfig.stop());
    await nodeConfig.waitForNodeConfig(5000);
    const store = new AllocationStore(join(dir, 'allocations.json'));
    await store.load();
    await store.putPending({
      containerID: 'c-gone',
      ifname: 'eth0',
      namespace: 'default',
      pod: 'gone',
      podUID: 'uid-gone',
      ip6: '2001:db8:100::5',
      pinned: false,
      anycast: [],
    });
    await store.commit('c-gone', 'eth0');
    const datapath = new FakeDatapath();
    await datapath.setupPod({
      containerID: 'c-gone',
      ifName: 'eth0',
      netns: datapath.createNetns(),
      hostVeth: hostVethName('c-gone', 'eth0'),
      ip6: '2001:db8:100::5',
    });
    await datapath.ensureAnycastRoute('2001:db8:300::1', [hostVethName('c-gone', 'eth0')]);
    const allPods = clusterPodCache(api, logger);
    allPods.start();
    stops.push(() => allPods.stop());
    const pods = nodePods(allPods, 'node-a');
    const bird = new FakeBird(join(dir, 'bird.conf'));
    bird.up = true;
    const undone: string[] = [];
    routing = new Routing({
      nodeName: 'node-a',
      transport: api,
      logger,
      store,
      pods,
      claimOf: claimsFor(store.entries()),
      claimsReady: async () => {},
      nodeConfig,
      datapath,
      bird: { reload: bird, status: bird },
      settings: {
        birdConfigPath: bird.configPath,
        refreshPeriodMs: 100,
        anycastPeriodMs: 50,
        bgpStatusPeriodMs: 50,
        secretNamespace: 'flock-system',
      },
    });
    const sweep = new OrphanSweep({
      store,
      pods,
      transport: api,
      undo: async (e) => {
        undone.push(e.pod);
        await store.remove(e.containerID, e.ifname);
      },
      graceMs: 0,
      periodMs: 100,
      logger,
    });
    stops.push(() => sweep.stop());
    await sweep.start();
    await routing.start();
    expect(logger.find('warn', 'the pod cache has not synced')).toHaveLength(2);
    await new Promise((r) => setTimeout(r, 300));
    expect(undone).toEqual([]);
    expect(await datapath.listAnycastRoutes()).toHaveLength(1);
    await expect(readFile(bird.configPath, 'utf8')).rejects.toThrow(/ENOENT/);
    expect(routing.announcements).toBeUndefined();

    heal();
    await eventually('swept', () => (undone.length ? undone : undefined));
    expect(undone).toEqual(['gone']);
    await eventually(
      'anycast route removed',
      async () => (await datapath.listAnycastRoutes()).length === 0,
    );
    await eventually('BIRD configured', () => bird.configures > 0);
    expect(bird.announced()).toEqual(['192.0.2.16/28', '2001:db8:100::/64']);
  });
});
