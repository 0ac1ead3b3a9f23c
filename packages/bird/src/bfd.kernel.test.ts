// BFD for real: the node's BIRD running the config flock renders (one peer with BFD at
// 100 ms × 3, one without) and a router BIRD with `protocol bfd` and `bfd on` on its session
// to the node, in two namespaces joined by a veth. The link is then cut without taking it down
// (nftables drops every packet inside the router's namespace, as a dead line card or a hung
// router would): the session with BFD must leave Established within the detection time, far
// inside the hold time, while the session without BFD stays up until its hold time.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as delay } from 'node:timers/promises';
import { Netns, addAddresses, eventually, requireKernelTier, vethBetween } from '@flock/testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BirdProcess } from '../testing/bird-process.js';
import { birdPaths } from '../testing/router.js';
import { BirdClient } from './client.js';
import { peerProtocolName, type BirdModel } from './model.js';
import { renderBirdConfig } from './render.js';
import type { BfdSession, ProtocolSummary } from './status.js';

const NODE_AS = 65001;
const ROUTER_AS = 65000;
const HOLD_TIME = 30;
const sessionTimers = {
  holdTime: HOLD_TIME,
  keepaliveTime: 10,
  connectDelayTime: 1,
  connectRetryTime: 1,
  errorWaitTime: { min: 1, max: 5 },
};
const BFD_PEER = '203.0.113.1';
const PLAIN_PEER = '2001:db8:ffff::1';

const model: BirdModel = {
  routerId: '203.0.113.2',
  asn: NODE_AS,
  peers: [
    {
      address: BFD_PEER,
      asn: ROUTER_AS,
      bfd: true,
      bfdTimers: { minRxIntervalMs: 100, minTxIntervalMs: 100, multiplier: 3 },
      ...sessionTimers,
    },
    { address: PLAIN_PEER, asn: ROUTER_AS, ...sessionTimers },
  ],
  aggregates: ['2001:db8:1::/64', '198.51.100.0/26'],
  pinned: [],
  anycast: [],
};

// The router's side as a top-of-rack operator would write it: BFD at the same 100 ms × 3.
const ROUTER_CONF = `router id 203.0.113.1;
log stderr all;
protocol device {}
protocol bfd {
  interface "*" { min rx interval 100 ms; min tx interval 100 ms; multiplier 3; };
}
template bgp node {
  local as ${ROUTER_AS};
  direct;
  hold time ${HOLD_TIME}; keepalive time 10; connect delay time 1; connect retry time 1; error wait time 1,5;
}
protocol bgp node4 from node {
  neighbor 203.0.113.2 as ${NODE_AS};
  bfd on;
  ipv4 { import all; export none; };
}
protocol bgp node6 from node {
  neighbor 2001:db8:ffff::2 as ${NODE_AS};
  ipv6 { import all; export none; };
}
`;

const established = (p: ProtocolSummary | undefined) => p?.info.startsWith('Established');

describe('BFD between the node BIRD and a router BIRD (kernel)', () => {
  let node: Netns;
  let router: Netns;
  let dir: string;
  let nodeBird: BirdProcess | undefined;
  let routerBird: BirdProcess | undefined;
  let nodeClient: BirdClient;
  let routerClient: BirdClient;

  const paths = (name: string) => birdPaths(dir, name);
  const routerProtocol = async (name: string) =>
    (await routerClient.showProtocols()).find((p) => p.name === name);
  const nodeProtocol = async (peer: string) =>
    (await nodeClient.showProtocols()).find((p) => p.name === peerProtocolName(peer));
  const session = async (client: BirdClient, address: string): Promise<BfdSession | undefined> =>
    (await client.showBfdSessions()).find((s) => s.address === address);

  beforeAll(async () => {
    requireKernelTier('bird', 'nft');
    node = await Netns.create('bfdn');
    router = await Netns.create('bfdr');
    await vethBetween(node, 'vnode', router, 'vrtr');
    await addAddresses(node, 'vnode', ['2001:db8:ffff::2/64', '203.0.113.2/24']);
    await addAddresses(router, 'vrtr', ['2001:db8:ffff::1/64', '203.0.113.1/24']);
    dir = mkdtempSync(join(tmpdir(), 'flock-bird-bfd-'));
    writeFileSync(paths('router').configPath, ROUTER_CONF);
    writeFileSync(paths('node').configPath, renderBirdConfig(model));
    routerBird = await BirdProcess.start((f, a) => router.spawn(f, a), paths('router'));
    nodeBird = await BirdProcess.start((f, a) => node.spawn(f, a), paths('node'));
    nodeClient = new BirdClient({ socketPath: paths('node').socketPath });
    routerClient = new BirdClient({ socketPath: paths('router').socketPath });
  });

  afterAll(async () => {
    await nodeBird?.stop();
    await routerBird?.stop();
    await node?.destroy();
    await router?.destroy();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it('the BFD session is Up on both sides with the rendered timers, BGP Established over it', async () => {
    await eventually(
      'both sessions Established',
      async () =>
        established(await routerProtocol('node4')) && established(await routerProtocol('node6')),
      { timeoutMs: 30_000 },
    );
    const nodeSide = await eventually('BFD Up on the node', async () => {
      const s = await session(nodeClient, BFD_PEER);
      return s?.state === 'Up' ? s : undefined;
    });
    const routerSide = await eventually('BFD Up on the router', async () => {
      const s = await session(routerClient, '203.0.113.2');
      return s?.state === 'Up' ? s : undefined;
    });
    // 100 ms each way; each side declares the other dead after 3 missed packets.
    expect(nodeSide).toMatchObject({ protocol: 'flock_bfd', intervalMs: 100, timeoutMs: 300 });
    expect(routerSide).toMatchObject({ intervalMs: 100, timeoutMs: 300 });
    // Only the peer that asked for BFD has a session.
    expect((await nodeClient.showBfdSessions()).map((s) => s.address)).toEqual([BFD_PEER]);
    expect(established(await nodeProtocol(BFD_PEER))).toBe(true);
  });

  it('a cut link takes the BFD session down within its detection time, far inside the hold time; the session without BFD stays up', async () => {
    const before = Date.now();
    await router.silence();
    const cut = Date.now();
    // Poll both BIRDs every 10 ms; note when each session stops being Established.
    const downAt: { router?: number; node?: number } = {};
    let routerInfo = '';
    while (Date.now() - before < 10_000 && (!downAt.router || !downAt.node)) {
      const [r, n] = await Promise.all([routerProtocol('node4'), nodeProtocol(BFD_PEER)]);
      if (!downAt.router && !established(r))
        [downAt.router, routerInfo] = [Date.now(), r?.info ?? ''];
      if (!downAt.node && !established(n)) downAt.node = Date.now();
      await delay(10);
    }
    const routerMs = (downAt.router ?? Infinity) - before;
    const nodeMs = (downAt.node ?? Infinity) - before;
    console.log(
      `BFD detection, from the cut (the nft command took ${cut - before} ms of it): router ${routerMs} ms, node ${nodeMs} ms; hold time ${HOLD_TIME} s`,
    );
    expect(routerInfo).toMatch(/BFD session down/);
    expect(routerMs).toBeLessThan(1000);
    expect(nodeMs).toBeLessThan(1000);
    expect(routerMs).toBeLessThan((HOLD_TIME * 1000) / 10);
    // The session without BFD notices nothing until its hold time: the cut alone is silent.
    await delay(Math.max(0, 2000 - (Date.now() - before)));
    expect(established(await routerProtocol('node6'))).toBe(true);
    expect((await session(nodeClient, BFD_PEER))?.state).toBe('Down');
  });

  it('the session comes back once packets flow again', async () => {
    await router.unsilence();
    await eventually(
      'BFD Up again',
      async () => (await session(nodeClient, BFD_PEER))?.state === 'Up',
      {
        timeoutMs: 30_000,
      },
    );
    await eventually(
      'BGP Established again',
      async () => established(await routerProtocol('node4')),
      {
        timeoutMs: 30_000,
      },
    );
    expect(established(await routerProtocol('node6'))).toBe(true);
  });
});
