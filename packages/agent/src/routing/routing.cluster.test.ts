// The routing side for real: the agent process against a real API server, pods wired by
// cnitool in real namespaces, the node's BIRD in the node namespace peering (TCP MD5 from a
// Secret) with a router namespace whose kernel table shows what the node announces. The test
// plays the kubelet: it sets pod readiness through the pods' status.
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { NodeConfig } from '@flock/api';
import { grantTo, nodeConfig } from '@flock/api/testing';
import { type HttpTransport, NODECONFIGS, NODES, PODS, objectPath } from '@flock/kube';
import { Netns, eventually, requireKernelTier, type ControlPlane } from '@flock/testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TestNode } from '../../testing/node-harness.js';
import { TestRouter, nodeBirdPaths, startNodeBird, type BirdProcess } from '@flock/bird/testing';
import { createTestPod, startTestCluster, type TestCluster } from '../../testing/test-cluster.js';

const NODE = 'node-r';
const PASSWORD = 'flock routing test';
const PINNED = '2001:db8:200::7';
const ANYCAST = '2001:db8:300::1';
let cp: ControlPlane;
let api: HttpTransport;
let nodeNs: Netns;
let router: TestRouter;
let node: TestNode;
let nodeBird: BirdProcess | undefined;
let dir: string;
const pods: Netns[] = [];

let apply: TestCluster['apply'];

async function createPod(name: string, annotations: Record<string, string> = {}) {
  const uid = await createTestPod(api, { name, nodeName: NODE, annotations });
  const ns = await Netns.create('rpod');
  pods.push(ns);
  return { uid: uid, ns, who: { namespace: 'default', name, uid: uid } };
}

/** The kubelet's part: the pod's Ready condition. */
const setReady = (name: string, ready: boolean) =>
  api.request({
    method: 'PATCH',
    path: objectPath(PODS, name, 'default', 'status'),
    contentType: 'application/strategic-merge-patch+json',
    body: {
      status: {
        phase: 'Running',
        conditions: [{ type: 'Ready', status: ready ? 'True' : 'False' }],
      },
    },
  });

/** The Event the agent wrote about a pod. */
const eventFor = (pod: string) =>
  eventually('the Event', async () => {
    const list = (await api.request({
      method: 'GET',
      path: '/apis/events.k8s.io/v1/namespaces/default/events',
    })) as { items: { reason?: string; regarding?: { name?: string }; note?: string }[] };
    return list.items.find((e) => e.regarding?.name === pod);
  });

const forceDelete = (name: string) =>
  api.request({
    method: 'DELETE',
    path: objectPath(PODS, name, 'default'),
    query: { gracePeriodSeconds: 0 },
  });

const status = async () =>
  NodeConfig.parse(await api.request({ method: 'GET', path: objectPath(NODECONFIGS, NODE) }))
    .status;
const bgpCondition = async () =>
  (await status())?.conditions?.find((c) => c.type === 'BGPEstablished');
const storeEntries = async () =>
  (
    JSON.parse(await readFile(node.storePath, 'utf8')) as {
      entries: { pod: string; podUID: string }[];
    }
  ).entries;
const nodeRoutes = async (dst: string) =>
  JSON.parse((await nodeNs.exec('ip', ['-j', '-6', 'route', 'show', dst])).stdout) as {
    dev?: string;
    nexthops?: { dev: string }[];
  }[];

beforeAll(async () => {
  requireKernelTier('bird', 'cnitool', 'nsenter');
  ({ cp, api, apply } = await startTestCluster(NODE));
  await api.request({
    method: 'PATCH',
    path: objectPath(NODES, NODE, undefined, 'status'),
    contentType: 'application/strategic-merge-patch+json',
    body: { status: { addresses: [{ type: 'InternalIP', address: '10.0.0.10' }] } },
  });
  await api.request({
    method: 'POST',
    path: '/api/v1/namespaces/default/secrets',
    body: {
      metadata: { name: 'bgp' },
      data: { password: Buffer.from(`${PASSWORD}\n`).toString('base64') },
    },
  });
  await apply(
    NODECONFIGS,
    nodeConfig({
      name: NODE,
      spec: {
        cidr4: '192.0.2.16/28',
        pinnedCIDRs: ['2001:db8:200::/64'],
        anycastCIDRs: ['2001:db8:300::/120'],
        pinnedGrants: [grantTo('default')],
        anycastGrants: [grantTo('default')],
        bgp: {
          asn: 64512,
          peers: [
            {
              address: '2001:db8:ffff::1',
              asn: 65000,
              passwordSecretRef: { name: 'bgp', key: 'password', namespace: 'default' },
            },
          ],
        },
      },
    }),
  );
  dir = await mkdtemp(join(tmpdir(), 'flock-routing-it-'));
  nodeNs = await Netns.create('rnode');
  router = await TestRouter.create({
    node: nodeNs,
    dir,
    routerAs: 65000,
    nodeAs: 64512,
    password: PASSWORD,
  });
  await router.startBird();
  node = new TestNode({
    cp,
    nodeName: NODE,
    netns: nodeNs,
    dir,
    extraArgs: [
      ...['--orphan-grace', '2s', '--sweep-period', '5s'],
      ...['--anycast-period', '1s', '--bgp-status-period', '1s'],
    ],
  });
  await node.installPlugin();
}, 300_000);

afterAll(async () => {
  await node?.agent?.stop();
  await nodeBird?.stop();
  await router?.destroy();
  for (const ns of pods) await ns.destroy();
  await nodeNs?.destroy();
  await cp?.stop();
  if (dir) await rm(dir, { recursive: true, force: true });
});

describe('announcements, anycast and the orphan sweep on a real node, router and API server', () => {
  it('a BIRD started after the agent still ends up announcing the aggregates to the router', async () => {
    await node.startAgent();
    const paths = nodeBirdPaths(dir);
    const conf = await eventually('bird.conf written', () => readFile(paths.configPath, 'utf8'));
    expect(conf).toContain('router id 10.0.0.10;');
    const waiting = await eventually('status says BIRD is unavailable', async () => {
      const c = await bgpCondition();
      return c?.status === 'False' ? c : undefined;
    });
    expect(waiting.reason).toBe('BirdUnavailable');
    nodeBird = await startNodeBird(nodeNs, paths);
    const aggregates = ['192.0.2.16/28', '2001:db8:100::/64'];
    expect(
      await router.waitFor((l) => JSON.stringify(l) === JSON.stringify(aggregates), 60_000),
    ).toEqual(aggregates);
  });

  it('NodeConfig status shows the session Established (MD5 password from the Secret)', async () => {
    const c = await eventually('BGPEstablished', async () => {
      const got = await bgpCondition();
      return got?.status === 'True' ? got : undefined;
    });
    expect(c.reason).toBe('AllPeersEstablished');
    const s = await status();
    expect(s?.bgpPeers).toEqual([
      expect.objectContaining({
        address: '2001:db8:ffff::1',
        state: 'Established',
        protocol: 'peer_2001_db8_ffff__1',
      }),
    ]);
    expect(s?.conditions?.find((x) => x.type === 'Ready')).toMatchObject({ status: 'True' });
    expect(s?.advertisedRoutes).toBe(2);
  });

  it("a pinned pod's /128 appears and disappears with the pod", async () => {
    const { ns, who } = await createPod('pinned', { 'flock.fritzlab.net/pinned-ip': PINNED });
    await node.cnitool('add', ns.path, who);
    const learned = await router.waitFor((l) => l.includes(`${PINNED}/128`), 10_000);
    expect(learned).toContain(`${PINNED}/128`);
    await node.cnitool('del', ns.path, who);
    expect(await router.waitFor((l) => !l.includes(`${PINNED}/128`), 10_000)).not.toContain(
      `${PINNED}/128`,
    );
  });

  it('a pod deleted from the API without a CNI DEL: routes, allocation and announcement gone within 5 s', async () => {
    const ip = '2001:db8:200::8';
    const { ns, who } = await createPod('vanishing', { 'flock.fritzlab.net/pinned-ip': ip });
    await node.cnitool('add', ns.path, who);
    await router.waitFor((l) => l.includes(`${ip}/128`), 10_000);
    expect(await nodeRoutes(ip)).toHaveLength(1);
    await forceDelete('vanishing');
    const deleted = Date.now();
    await eventually(
      'everything gone',
      async () =>
        !(await router.learned()).includes(`${ip}/128`) &&
        (await nodeRoutes(ip)).length === 0 &&
        !(await storeEntries()).some((e) => e.pod === 'vanishing'),
      { timeoutMs: 10_000 },
    );
    expect(Date.now() - deleted).toBeLessThan(5_000);
  });

  it('a pod re-created under the same name with a new UID: the old allocation is swept', async () => {
    const first = await createPod('reused');
    await node.cnitool('add', first.ns.path, first.who);
    await forceDelete('reused');
    const second = await createPod('reused');
    await node.cnitool('add', second.ns.path, second.who);
    await eventually(
      'old allocation swept',
      async () => {
        const uids = (await storeEntries()).filter((e) => e.pod === 'reused').map((e) => e.podUID);
        return uids.length === 1 && uids[0] === second.uid;
      },
      { timeoutMs: 15_000 },
    );
  });

  it('anycast: multipath over two Ready pods, one nexthop when one is NotReady, withdrawn when none', async () => {
    // Two pods of one group (a Deployment's replicas share their controller's key).
    const annotations = {
      'flock.fritzlab.net/anycast': ANYCAST,
      'flock.fritzlab.net/claim-key': 'Deployment/dns',
    };
    const a = await createPod('any-a', annotations);
    const b = await createPod('any-b', annotations);
    await node.cnitool('add', a.ns.path, a.who);
    await node.cnitool('add', b.ns.path, b.who);
    expect(await nodeRoutes(ANYCAST)).toEqual([]); // nobody Ready yet
    await setReady('any-a', true);
    await setReady('any-b', true);
    await eventually(
      'multipath',
      async () => (await nodeRoutes(ANYCAST))[0]?.nexthops?.length === 2,
    );
    await router.waitFor((l) => l.includes(`${ANYCAST}/128`), 10_000);
    expect((await router.learned()).filter((p) => p === `${ANYCAST}/128`)).toHaveLength(1);

    await setReady('any-b', false);
    await eventually('one nexthop', async () => {
      const r = (await nodeRoutes(ANYCAST))[0];
      return r !== undefined && r.nexthops === undefined && r.dev !== undefined;
    });
    expect((await router.learned()).includes(`${ANYCAST}/128`)).toBe(true);

    await setReady('any-a', false);
    await eventually('no route', async () => (await nodeRoutes(ANYCAST)).length === 0);
    expect(await router.waitFor((l) => !l.includes(`${ANYCAST}/128`), 10_000)).not.toContain(
      `${ANYCAST}/128`,
    );
  });

  it('anycast outside the allowed ranges is refused with a CNI error and an Event', async () => {
    const { ns, who } = await createPod('bad-any', {
      'flock.fritzlab.net/anycast': '2001:db8:999::1',
    });
    await expect(node.cnitool('add', ns.path, who)).rejects.toThrow(
      /101|outside this node's anycast ranges/,
    );
    const event = await eventFor('bad-any');
    expect(event).toMatchObject({ reason: 'FlockAddressRefused' });
    expect(event.note).toMatch(/2001:db8:999::1/);
  });

  it('BGP communities the Pool does not allow are refused with a CNI error and an Event', async () => {
    const { ns, who } = await createPod('bad-tag', {
      'flock.fritzlab.net/bgp-communities': '64512:666',
    });
    await expect(node.cnitool('add', ns.path, who)).rejects.toThrow(/101|not allowed/);
    const event = await eventFor('bad-tag');
    expect(event).toMatchObject({ reason: 'FlockCommunityRefused' });
    expect(event.note).toMatch(/64512:666 are not allowed/);
  });

  it('a pod deleted while the agent is down is torn down and withdrawn right after the agent starts, not at a periodic sweep', async () => {
    const ip = '2001:db8:200::9';
    const { ns, who } = await createPod('while-down', { 'flock.fritzlab.net/pinned-ip': ip });
    await node.cnitool('add', ns.path, who);
    await router.waitFor((l) => l.includes(`${ip}/128`), 10_000);
    await node.agent!.stop(); // BIRD goes on announcing what it was last given
    await forceDelete('while-down');
    expect(await router.learned()).toContain(`${ip}/128`);
    // A periodic sweep 10 minutes away: only the start-up sweep can clean up.
    await node.startAgent(['--sweep-period', '10m']);
    const started = Date.now();
    await eventually(
      'torn down and withdrawn',
      async () =>
        !(await storeEntries()).some((e) => e.pod === 'while-down') &&
        (await nodeRoutes(ip)).length === 0 &&
        !(await router.learned()).includes(`${ip}/128`),
      { timeoutMs: 30_000 },
    );
    expect(Date.now() - started).toBeLessThan(10_000);
    const swept = node
      .agent!.logs.filter((l) => l.includes('orphan sweep removed'))
      .map((l) => JSON.parse(l) as { pod?: string; trigger?: string })
      .find((l) => l.pod === 'default/while-down');
    // The start-up sweep (or the re-run it scheduled for an allocation still in its grace).
    expect(['pod cache synced', 'grace period over']).toContain(swept?.trigger);
    await node.agent!.stop();
    await node.startAgent(); // the usual settings for what follows
  });

  it("NodeConfig status follows the BGP session when the router's BIRD stops and starts", async () => {
    await router.stopBird();
    const down = await eventually(
      'BGPEstablished False',
      async () => {
        const c = await bgpCondition();
        return c?.status === 'False' ? c : undefined;
      },
      { timeoutMs: 60_000 },
    );
    expect(down.reason).toBe('PeersNotEstablished');
    expect(down.message).toContain('2001:db8:ffff::1');
    expect((await status())?.bgpPeers?.[0]?.state).not.toBe('Established');
    await router.startBird();
    await eventually(
      'BGPEstablished True again',
      async () => (await bgpCondition())?.status === 'True',
      {
        timeoutMs: 90_000,
      },
    );
  }, 200_000);
});
