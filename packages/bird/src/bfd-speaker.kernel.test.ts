// The node's BFD speaker for real: the node runs two BIRDs, the BGP one without BFD
// (withoutBfd) and the speaker (renderBfdSpeakerConfig), against a router BIRD whose multihop
// BGP session to the node has `bfd on`, as a top-of-rack router would have it. The router
// writes what it learns into its kernel table and `ip monitor route` there records every
// deletion. A restart of the BGP BIRD — graceful or a crash — must delete nothing at the router
// (the BFD session stays Up, the router bridges the TCP session as a graceful-restart helper);
// the speaker going silent, as when the node dies, must delete the node's routes within the
// BFD detection time.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as delay } from 'node:timers/promises';
import { Netns, addAddresses, eventually, requireKernelTier, vethBetween } from '@flock/testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BirdProcess } from '../testing/bird-process.js';
import { birdPaths } from '../testing/router.js';
import { BirdClient } from './client.js';
import type { BirdModel } from './model.js';
import { renderBfdSpeakerConfig, withoutBfd } from './render-bfd-speaker.js';
import { renderBirdConfig } from './render.js';

const NODE_AS = 65001;
const ROUTER_AS = 65000;
const NODE_ADDR = '2001:db8:ffff::2';
const ROUTER_LINK = '2001:db8:ffff::1';
const ROUTER_LOOPBACK = '2001:db8:ee::1';
const AGGREGATE = '2001:db8:1::/64';
const PINNED = '2001:db8:200::10';

const model: BirdModel = {
  routerId: '203.0.113.2',
  asn: NODE_AS,
  peers: [
    {
      address: ROUTER_LOOPBACK,
      asn: ROUTER_AS,
      multihop: 2,
      sourceAddress: NODE_ADDR,
      holdTime: 30,
      keepaliveTime: 10,
      connectDelayTime: 1,
      connectRetryTime: 1,
      errorWaitTime: { min: 1, max: 5 },
      bfd: true,
      bfdTimers: { minRxIntervalMs: 100, minTxIntervalMs: 100, multiplier: 3 },
    },
  ],
  aggregates: [AGGREGATE],
  pinned: [PINNED],
  anycast: [],
};

// The router: BGP from its loopback, `bfd on`, graceful-restart helper (BIRD's default), the
// link's /64 for resolving the node's next hop, learned routes into its kernel table.
const ROUTER_CONF = `router id 203.0.113.1;
log stderr all;
protocol device {}
protocol direct { ipv6; }
protocol kernel { ipv6 { import none; export where source = RTS_BGP; }; }
protocol bfd {
  multihop { min rx interval 100 ms; min tx interval 100 ms; multiplier 3; };
}
protocol bgp node {
  local ${ROUTER_LOOPBACK} as ${ROUTER_AS};
  neighbor ${NODE_ADDR} as ${NODE_AS};
  multihop 2;
  hold time 30; keepalive time 10; connect delay time 1; connect retry time 1; error wait time 1,5;
  bfd on;
  ipv6 { import all; export none; };
}
`;

describe('a BFD speaker beside the BGP BIRD (kernel)', () => {
  let node: Netns;
  let router: Netns;
  let dir: string;
  let bgp: BirdProcess | undefined;
  let speaker: BirdProcess | undefined;
  let routerBird: BirdProcess | undefined;
  let routerClient: BirdClient;
  let monitor: ReturnType<Netns['spawn']> | undefined;
  const deleted: { at: number; line: string }[] = [];

  const paths = (name: string) => birdPaths(dir, name);
  const startBgp = async (recover: boolean) => {
    bgp = await BirdProcess.start((f, a) => node.spawn(f, a), paths('bgp'), 10_000, { recover });
  };
  const routerState = async () =>
    (await routerClient.showProtocols()).find((p) => p.name === 'node')?.info ?? '';
  const recovered = async () => {
    const reply = await routerClient.command('show protocols all node');
    const text = reply.lines.map((l) => l.text).join('\n');
    return /Established/.test(text) && !/Neighbor graceful restart active/.test(text);
  };
  const routerBfd = async () => (await routerClient.showBfdSessions())[0]?.state;
  const learned = async () => {
    const { stdout } = await router.exec('ip', ['-6', 'route', 'show', 'proto', 'bird']);
    return stdout;
  };
  const deletionsSince = (t: number) => deleted.filter((d) => d.at >= t);

  beforeAll(async () => {
    requireKernelTier('bird', 'ip', 'nft');
    node = await Netns.create('bfsn');
    router = await Netns.create('bfsr');
    await vethBetween(node, 'uplink', router, 'node1');
    await addAddresses(node, 'uplink', [`${NODE_ADDR}/64`]);
    await addAddresses(router, 'node1', [`${ROUTER_LINK}/64`]);
    await router.exec('ip', ['-6', 'addr', 'add', `${ROUTER_LOOPBACK}/128`, 'dev', 'lo']);
    await node.exec('ip', ['-6', 'route', 'add', `${ROUTER_LOOPBACK}/128`, 'via', ROUTER_LINK]);
    dir = mkdtempSync(join(tmpdir(), 'flock-bird-bfd-speaker-'));
    writeFileSync(paths('router').configPath, ROUTER_CONF);
    writeFileSync(paths('bgp').configPath, renderBirdConfig(withoutBfd(model)));
    writeFileSync(paths('bfd').configPath, renderBfdSpeakerConfig(model));
    monitor = router.spawn('ip', ['-6', 'monitor', 'route']);
    monitor.stdout?.on('data', (d: Buffer) => {
      for (const line of d.toString().split('\n'))
        if (line.startsWith('Deleted')) deleted.push({ at: Date.now(), line });
    });
    routerBird = await BirdProcess.start((f, a) => router.spawn(f, a), paths('router'));
    speaker = await BirdProcess.start((f, a) => node.spawn(f, a), paths('bfd'));
    await startBgp(false);
    routerClient = new BirdClient({ socketPath: paths('router').socketPath });
  });

  afterAll(async () => {
    monitor?.kill();
    await bgp?.stop();
    await speaker?.stop();
    await routerBird?.stop();
    await node?.destroy();
    await router?.destroy();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it('the router ties its BGP session to the speaker: BFD Up, BGP Established, routes learned', async () => {
    await eventually(
      'BGP Established',
      async () => (await routerState()).startsWith('Established'),
      {
        timeoutMs: 30_000,
      },
    );
    await eventually('BFD Up at the router', async () => (await routerBfd()) === 'Up');
    await eventually('routes in the router kernel', async () => {
      const routes = await learned();
      return routes.includes(AGGREGATE) && routes.includes(PINNED);
    });
    // The BGP BIRD has no BFD of its own: the speaker is the router's only BFD partner.
    const bgpClient = new BirdClient({ socketPath: paths('bgp').socketPath });
    await expect(bgpClient.showBfdSessions()).rejects.toThrow();
    const speakerClient = new BirdClient({ socketPath: paths('bfd').socketPath });
    expect(await speakerClient.showBfdSessions()).toMatchObject([
      { address: ROUTER_LOOPBACK, state: 'Up', intervalMs: 100 },
    ]);
  });

  for (const how of ['graceful', 'crash'] as const) {
    it(`a ${how === 'graceful' ? 'graceful restart' : 'crash (SIGKILL) and restart'} of the BGP BIRD deletes nothing at the router; BFD stays Up`, async () => {
      const since = Date.now();
      if (how === 'graceful') {
        const client = new BirdClient({ socketPath: paths('bgp').socketPath });
        await client.command('graceful restart').catch(() => undefined);
      } else {
        bgp?.child.kill('SIGKILL');
      }
      await eventually('BGP BIRD gone', () => Promise.resolve(bgp?.exited === true));
      await eventually(
        'the router bridges the session (graceful restart helper)',
        async () => !(await routerState()).startsWith('Established'),
        { timeoutMs: 10_000 },
      );
      // Down a while, as an upgrade's new container takes time to start.
      await delay(2_000);
      expect(await routerBfd()).toBe('Up');
      await startBgp(true);
      // Recovery over (End-of-RIB both ways, ~8 s with bird -R): the stale routes were
      // refreshed in place, never deleted. A second restart before this would flush them (BIRD's
      // helper gives up on a peer that fails again while it is still recovering).
      await eventually('graceful restart over at the router', recovered, { timeoutMs: 40_000 });
      const routes = await learned();
      expect(routes).toContain(AGGREGATE);
      expect(routes).toContain(PINNED);
      expect(deletionsSince(since)).toEqual([]);
      expect(await routerBfd()).toBe('Up');
    });
  }

  it('the speaker going silent (the node dies) deletes the node routes at the router within the BFD detection time', async () => {
    // Every packet in or out of the node dropped, the link left up: a power loss, as the router
    // sees it (killing the BIRDs instead would let the node's kernel answer with resets and
    // port-unreachables, which tell the router at once).
    await node.silence();
    const since = Date.now();
    await eventually('both routes deleted', () =>
      Promise.resolve(deletionsSince(since).length >= 2),
    );
    const ms = Math.max(...deletionsSince(since).map((d) => d.at - since));
    console.log(`node death → routes deleted at the router: ${ms} ms (BFD 100 ms × 3)`);
    expect(ms).toBeLessThan(1_000);
    expect(ms).toBeGreaterThan(100); // it was the BFD timeout, not a reset
    expect(await learned()).toBe('');
  });
});
