// Real BGP: a node namespace running BIRD with the rendered config, reloaded by applyBirdConfig,
// and a router namespace running BIRD that learns from the node and writes what it learns into
// its own kernel tables, where the tests read it. One veth joins them.
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as delay } from 'node:timers/promises';
import { Netns, addAddresses, requireKernelTier, vethBetween } from '@flock/testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { BirdProcess, type BirdPaths } from '../testing/bird-process.js';
import { applyBirdConfig, type ReloadOutcome } from './apply.js';
import { BirdClient } from './client.js';
import { canonicalCidr, type BirdModel } from './model.js';
import { announcedPrefixes, renderBirdConfig } from './render.js';
import { peerStatuses, routeCounts, type ProtocolDetail } from './status.js';

const NODE_AS = 65001;
const ROUTER_AS = 65000;
const PASSWORD = 'flock kernel test';
const fast = {
  holdTime: 9,
  keepaliveTime: 3,
  connectDelayTime: 1,
  connectRetryTime: 1,
  errorWaitTime: { min: 1, max: 5 },
};

const model1: BirdModel = {
  routerId: '203.0.113.2',
  asn: NODE_AS,
  peers: [
    {
      address: '2001:db8:ffff::1',
      asn: ROUTER_AS,
      sourceAddress: '2001:db8:ffff::2',
      password: PASSWORD,
      ...fast,
    },
    { address: '203.0.113.1', asn: ROUTER_AS, bfd: true, ...fast },
  ],
  aggregates: ['2001:db8:1::/64', '198.51.100.0/26'],
  pinned: ['2001:db8:99::7', '192.0.2.77'],
  anycast: ['2001:db8:aa::1'],
};
const model2: BirdModel = {
  ...model1,
  pinned: [...model1.pinned, '2001:db8:99::8', '192.0.2.78'],
  anycast: [...model1.anycast, '2001:db8:aa::2'],
};
const model3: BirdModel = {
  ...model1,
  aggregates: ['2001:db8:1::/64'],
  pinned: ['2001:db8:99::8', '192.0.2.78'],
  anycast: ['2001:db8:aa::2'],
};

const ROUTER_CONF = `router id 203.0.113.1;
protocol device {}
protocol kernel { ipv6 { import none; export all; }; }
protocol kernel { ipv4 { import none; export all; }; }
protocol bfd {}
template bgp node {
  local as ${ROUTER_AS};
  hold time 9; keepalive time 3; connect delay time 1; connect retry time 1; error wait time 1,5;
}
protocol bgp node6 from node {
  neighbor 2001:db8:ffff::2 as ${NODE_AS};
  password "${PASSWORD}";
  ipv6 { import all; export none; };
  ipv4 { import all; export none; extended next hop on; };
}
protocol bgp node4 from node {
  neighbor 203.0.113.2 as ${NODE_AS};
  bfd on;
  ipv4 { import all; export none; };
}
`;

// Everything a careless config could leak: a kernel protocol learning the node's kernel table
// (which holds extra routes, see below) and a stray static protocol with shorter, longer and
// unrelated prefixes.
const LEAKY_EXTRAS = `
protocol kernel leak_kernel6 { learn; ipv6 { import all; export none; }; }
protocol kernel leak_kernel4 { learn; ipv4 { import all; export none; }; }
protocol static leak_static6 { ipv6; route 2001:db8:1::/48 blackhole; route 2001:db8:1::99/128 blackhole; route 2001:db8:bad:1::/64 blackhole; }
protocol static leak_static4 { ipv4; route 198.51.100.0/24 blackhole; route 10.99.0.0/16 blackhole; }
`;
const NODE_KERNEL_EXTRAS = [
  ['-6', 'blackhole', '2001:db8:bad::/48'],
  ['-6', 'blackhole', '2001:db8:1::99/128'],
  ['-6', 'blackhole', '::/0'],
  ['-4', 'blackhole', '198.51.100.128/25'],
  ['-4', 'blackhole', '192.0.2.99/32'],
  ['-4', 'blackhole', '0.0.0.0/0'],
];

const expected = (m: BirdModel) => {
  const p = announcedPrefixes(m);
  return [...p[6], ...p[4]].sort();
};

const IpRoutes = z.array(z.object({ dst: z.string() }));

describe('BIRD announcing the model to a router over BGP (kernel)', () => {
  let node: Netns;
  let router: Netns;
  let dir: string;
  let nodePaths: BirdPaths;
  let nodeBird: BirdProcess | undefined;
  let routerBird: BirdProcess | undefined;
  let nodeClient: BirdClient;
  let extraConfig = '';
  /** The config the node's BIRD last accepted: what a refused one is replaced with. */
  let accepted: string | undefined;

  beforeAll(async () => {
    requireKernelTier('bird');
    node = await Netns.create('brdn');
    router = await Netns.create('brdr');
    await vethBetween(node, 'vnode', router, 'vrtr');
    await addAddresses(node, 'vnode', ['2001:db8:ffff::2/64', '203.0.113.2/24']);
    await addAddresses(router, 'vrtr', ['2001:db8:ffff::1/64', '203.0.113.1/24']);
    dir = mkdtempSync(join(tmpdir(), 'flock-bird-bgp-'));
    const routerPaths = {
      configPath: join(dir, 'router.conf'),
      socketPath: join(dir, 'router.ctl'),
      pidPath: join(dir, 'router.pid'),
    };
    writeFileSync(routerPaths.configPath, ROUTER_CONF);
    routerBird = await BirdProcess.start((f, a) => router.spawn(f, a), routerPaths);
    nodePaths = {
      configPath: join(dir, 'bird.conf'),
      socketPath: join(dir, 'bird.ctl'),
      pidPath: join(dir, 'bird.pid'),
    };
    nodeClient = new BirdClient({ socketPath: nodePaths.socketPath });
  });

  afterAll(async () => {
    await nodeBird?.stop();
    await routerBird?.stop();
    await node?.destroy();
    await router?.destroy();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  /** The prefixes in the router's kernel tables that BIRD put there. */
  async function routerPrefixes(): Promise<string[]> {
    const found: string[] = [];
    for (const [flag, hostLength] of [
      ['-6', 128],
      ['-4', 32],
    ] as const) {
      const { stdout } = await router.exec('ip', ['-j', flag, 'route', 'show', 'proto', 'bird']);
      for (const { dst } of IpRoutes.parse(JSON.parse(stdout))) {
        found.push(
          dst === 'default'
            ? flag === '-6'
              ? '::/0'
              : '0.0.0.0/0'
            : canonicalCidr(dst.includes('/') ? dst : `${dst}/${hostLength}`),
        );
      }
    }
    return found.sort();
  }

  /** Poll the router until its table is exactly `want`; return what it holds at the end. */
  async function routerReaches(want: string[], timeoutMs: number): Promise<string[]> {
    const deadline = Date.now() + timeoutMs;
    let got = await routerPrefixes();
    while (JSON.stringify(got) !== JSON.stringify(want) && Date.now() < deadline) {
      await delay(50);
      got = await routerPrefixes();
    }
    return got;
  }

  async function sessionsEstablished(timeoutMs: number): Promise<ProtocolDetail[]> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const protocols = await nodeClient.showProtocolsAll();
      const states = peerStatuses(model1.peers, protocols).map((s) => s.state);
      if (states.every((s) => s === 'Established') || Date.now() > deadline) return protocols;
      await delay(100);
    }
  }

  /** Render `m` (plus extraConfig) and reload the node's BIRD with it, as the agent does. */
  async function update(m: BirdModel): Promise<ReloadOutcome> {
    const text = renderBirdConfig(m) + extraConfig;
    const outcome = await applyBirdConfig({
      configPath: nodePaths.configPath,
      text,
      control: nodeClient,
      check: true,
      ...(accepted === undefined ? {} : { restore: accepted }),
    });
    if (outcome.status === 'applied') accepted = text;
    return outcome;
  }

  function startNodeBird(): Promise<BirdProcess> {
    return BirdProcess.start((f, a) => node.spawn(f, a), nodePaths);
  }

  it('BIRD started after the first render still ends up announcing (start-up race)', async () => {
    const outcome = update(model1); // BIRD is not running: the client keeps retrying
    await delay(1500);
    expect(readFileSync(nodePaths.configPath, 'utf8')).toBe(renderBirdConfig(model1));
    nodeBird = await startNodeBird();
    expect((await outcome).status).toBe('applied');
    expect(await routerReaches(expected(model1), 30_000)).toEqual(expected(model1));
  });

  it('the sessions come up and BIRD reports them per peer with their route counts', async () => {
    const protocols = await sessionsEstablished(30_000);
    expect(peerStatuses(model1.peers, protocols)).toEqual([
      expect.objectContaining({
        protocol: 'peer_2001_db8_ffff__1',
        state: 'Established',
        routesExported: 5,
      }),
      expect.objectContaining({
        protocol: 'peer_203_0_113_1',
        state: 'Established',
        routesExported: 2,
      }),
    ]);
    const counts = Object.fromEntries(protocols.map((p) => [p.name, routeCounts(p).imported]));
    expect(counts).toMatchObject({
      flock_aggregates6: 1,
      flock_aggregates4: 1,
      flock_pinned6: 1,
      flock_pinned4: 1,
      flock_anycast6: 1,
    });
    const routerSide = await new BirdClient({
      socketPath: routerBird!.paths.socketPath,
    }).showProtocols();
    expect(routerSide.filter((p) => p.proto === 'BGP').map((p) => [p.name, p.info])).toEqual([
      ['node6', 'Established'],
      ['node4', 'Established'],
    ]);
  });

  it('the router learns exactly the modelled prefixes: nothing from the kernel table or other protocols', async () => {
    for (const [family, type, prefix] of NODE_KERNEL_EXTRAS) {
      await node.exec('ip', [family!, 'route', 'add', type!, prefix!]);
    }
    extraConfig = LEAKY_EXTRAS;
    expect((await update(model1)).status).toBe('applied');
    // The leak candidates are in the node's BIRD tables...
    const deadline = Date.now() + 10_000;
    let imported: Record<string, number> = {};
    while (Date.now() < deadline) {
      const protocols = await nodeClient.showProtocolsAll();
      imported = Object.fromEntries(protocols.map((p) => [p.name, routeCounts(p).imported]));
      if ((imported['leak_kernel6'] ?? 0) >= 3 && (imported['leak_kernel4'] ?? 0) >= 3) break;
      await delay(100);
    }
    expect(imported).toMatchObject({ leak_static6: 3, leak_static4: 2 });
    expect(imported['leak_kernel6']).toBeGreaterThanOrEqual(3);
    expect(imported['leak_kernel4']).toBeGreaterThanOrEqual(3);
    // ...and none of them reaches the router.
    await delay(2000);
    expect(await routerPrefixes()).toEqual(expected(model1));
    const statuses = peerStatuses(model1.peers, await nodeClient.showProtocolsAll());
    expect(statuses.map((s) => s.routesExported)).toEqual([5, 2]);
    extraConfig = '';
    expect((await update(model1)).status).toBe('applied');
  });

  it('a model change is on the router within 2 s', async () => {
    const started = Date.now();
    const outcome = update(model2);
    const got = await routerReaches(expected(model2), 2000 - (Date.now() - started));
    expect(got).toEqual(expected(model2));
    expect((await outcome).status).toBe('applied');
  });

  it('removed prefixes are withdrawn', async () => {
    const started = Date.now();
    const outcome = update(model3);
    expect(await routerReaches(expected(model3), 2000 - (Date.now() - started))).toEqual(
      expected(model3),
    );
    expect((await outcome).status).toBe('applied');
  });

  it("a broken config is refused with BIRD's message and line while the old routes stay", async () => {
    extraConfig = '\nprotocol static broken {\n  ipv6;\n  route 2001:db8:bad::/48 blackhole\n}\n';
    const text = renderBirdConfig(model1) + extraConfig;
    const badLine = text.split('\n').indexOf('  route 2001:db8:bad::/48 blackhole') + 2; // the "}" after it
    const outcome = await update(model1);
    expect(outcome.status).toBe('refused');
    const { error } = outcome as Extract<ReloadOutcome, { status: 'refused' }>;
    expect(error.code).toBe(8002);
    expect(error.reply.text).toMatch(/syntax error/);
    expect(error.location).toEqual({ file: nodePaths.configPath, line: badLine, column: 1 });
    expect(readFileSync(nodePaths.configPath, 'utf8')).toBe(renderBirdConfig(model3)); // last good
    expect(await routerPrefixes()).toEqual(expected(model3));
    await delay(1000);
    expect(await routerPrefixes()).toEqual(expected(model3));
    expect(
      peerStatuses(model1.peers, await nodeClient.showProtocolsAll()).map((s) => s.state),
    ).toEqual(['Established', 'Established']);
    // BIRD still takes the next good config.
    extraConfig = '';
    const started = Date.now();
    const next = update(model1);
    expect(await routerReaches(expected(model1), 2000 - (Date.now() - started))).toEqual(
      expected(model1),
    );
    expect((await next).status).toBe('applied');
  });

  it('BIRD started after the client gave up still announces what the file holds', async () => {
    await nodeBird?.stop();
    const outcome = await applyBirdConfig({
      configPath: nodePaths.configPath,
      text: renderBirdConfig(model3),
      control: new BirdClient({ socketPath: nodePaths.socketPath, attempts: 2, retryDelayMs: 100 }),
    });
    expect(outcome.status).toBe('unreachable');
    nodeBird = await startNodeBird();
    expect(await routerReaches(expected(model3), 30_000)).toEqual(expected(model3));
  });
});
