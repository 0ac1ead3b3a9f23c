// Communities and local preference as a router receives them: the node's plan (NodeConfig with
// class communities, a local preference and the pods' allowed communities; a pinned pod and
// an anycast pod that add their own) rendered and handed to a real BIRD by the announcer, as
// the agent does, and a router BIRD with an eBGP session (IPv6, carrying IPv4 too) and an iBGP
// session (IPv4) to the node; `show route all` on the router says what arrived.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { BirdClient, peerProtocolName } from '@flock/bird';
import { createMemoryLogger } from '@flock/kube/testing';
import { Netns, addAddresses, eventually, requireKernelTier } from '@flock/testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { NODE_CONFIG, claimsFor, entry, pod } from '../../testing/routing-fixtures.js';
import {
  TestRouter,
  nodeBirdPaths,
  parseRoutesAll,
  startNodeBird,
  type BirdProcess,
  type RouterRoute,
} from '@flock/bird/testing';
import { planAnnouncements, toBirdModel } from './announcements.js';
import { BirdAnnouncer } from './announcer.js';
import { birdControls } from './wiring.js';

const NODE_AS = 64512;
const ROUTER_AS = 65000;
const fast = { holdTime: 9, keepaliveTime: 3, connectDelayTime: 1, connectRetryTime: 1 };
const spec = {
  ...NODE_CONFIG.spec,
  // The legacy grant: allowedPodCommunities count for namespaces it covers (every one).
  pinnedGrants: [{ anyNamespace: true }],
  bgp: {
    asn: NODE_AS,
    peers: [],
    localPreference: 300,
    communities: {
      aggregates: { standard: ['64512:100'], large: ['64512:1:1'] },
      pinned: { standard: ['64512:200'] },
      anycast: { standard: ['64512:300'], large: ['64512:3:3'] },
    },
    allowedPodCommunities: { standard: ['64512:666'], large: ['64512:6:6'] },
  },
};
const PINNED = '2001:db8:200::7';
const ANYCAST = '2001:db8:300::1';

// The router's iBGP session: the same ASN as the node, over IPv4 on the same link.
const IBGP = `protocol bgp node_ibgp {
  local 203.0.113.1 as ${NODE_AS};
  neighbor 203.0.113.2 as ${NODE_AS};
  direct;
  hold time 9; keepalive time 3; connect delay time 1; connect retry time 1; error wait time 1,5;
  ipv4 { import all; export none; };
}
`;

describe('communities and local preference at the router (kernel)', () => {
  let dir: string;
  let node: Netns;
  let router: TestRouter;
  let nodeBird: BirdProcess | undefined;
  let announcer: BirdAnnouncer | undefined;
  let routes: RouterRoute[] = [];

  const route = (prefix: string, protocol: string) => {
    const found = routes.find((r) => r.prefix === prefix && r.protocol === protocol);
    if (!found)
      throw new Error(`the router has no ${prefix} from ${protocol}: ${JSON.stringify(routes)}`);
    return found.attributes;
  };
  const nodeClient = () => new BirdClient({ socketPath: nodeBirdPaths(dir).socketPath });
  /** BIRD prints "(64512,100) (64512,200)" and "(64512, 1, 1)": compare without blanks. */
  const list = (value: string | undefined) =>
    (value ?? '').replaceAll(' ', '').split(')(').join(') (');

  beforeAll(async () => {
    requireKernelTier('bird');
    dir = await mkdtemp(join(tmpdir(), 'flock-communities-k-'));
    node = await Netns.create('cmnode');
    router = await TestRouter.create({
      node,
      dir,
      routerAs: ROUTER_AS,
      nodeAs: NODE_AS,
      extraConfig: IBGP,
    });
    await addAddresses(router.ns, 'vtor', ['203.0.113.1/24']);
    await addAddresses(node, 'uplink', ['203.0.113.2/24']);
    await router.startBird();

    const entries = [
      entry('web', { ip6: PINNED, pinned: true, communities: ['64512:666'] }),
      entry('svc', { ip6: '2001:db8:100::3', anycast: [ANYCAST], communities: ['64512:6:6'] }),
    ];
    const plan = planAnnouncements({
      spec,
      entries,
      podOf: (_ns, name) => (name === 'web' || name === 'svc' ? pod(name) : undefined),
      claimOf: claimsFor(entries),
    });
    const model = toBirdModel({
      plan,
      spec,
      routerId: '10.0.0.10',
      peers: [
        { address: router.router6, asn: ROUTER_AS, ...fast },
        { address: '203.0.113.1', asn: NODE_AS, ...fast },
      ],
    });
    const paths = nodeBirdPaths(dir);
    announcer = new BirdAnnouncer({
      configPath: paths.configPath,
      control: birdControls(paths.socketPath).reload,
      logger: createMemoryLogger(),
    });
    announcer.announce(model); // writes bird.conf; BIRD is not up yet
    await eventually('bird.conf written', () => announcer!.state.status === 'unreachable');
    nodeBird = await startNodeBird(node, paths);
    await eventually('applied', () => announcer!.state.status === 'applied');
    routes = await eventually(
      'the routes over both sessions',
      async () => {
        const all = await router.routesAll();
        // The IPv4 aggregate too: over the IPv6 session (extended next hop) it may come later.
        const want = [`${PINNED}/128`, `${ANYCAST}/128`, '2001:db8:100::/64', '192.0.2.16/28'];
        return want.every((p) => all.some((r) => r.prefix === p && r.protocol === 'node')) &&
          all.some((r) => r.prefix === '192.0.2.16/28' && r.protocol === 'node_ibgp')
          ? all
          : undefined;
      },
      { timeoutMs: 60_000 },
    );
  });
  afterAll(async () => {
    await announcer?.close();
    await nodeBird?.stop();
    await router?.destroy();
    await node?.destroy();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it("carries each class's communities, and the pods' own on their addresses only", () => {
    const aggregate = route('2001:db8:100::/64', 'node');
    expect(list(aggregate['BGP.community'])).toBe('(64512,100)');
    expect(list(aggregate['BGP.large_community'])).toBe('(64512,1,1)');
    const pinned = route(`${PINNED}/128`, 'node');
    expect(list(pinned['BGP.community'])).toBe('(64512,200) (64512,666)');
    expect(pinned['BGP.large_community']).toBeUndefined();
    const anycast = route(`${ANYCAST}/128`, 'node');
    expect(list(anycast['BGP.community'])).toBe('(64512,300)');
    expect(list(anycast['BGP.large_community'])).toBe('(64512,3,3) (64512,6,6)');
    // IPv4 over the IPv6 session: the aggregate carries its class's communities too.
    expect(list(route('192.0.2.16/28', 'node')['BGP.community'])).toBe('(64512,100)');
  });

  it('sets the local preference on the iBGP session only', async () => {
    const ibgp = route('192.0.2.16/28', 'node_ibgp');
    expect(ibgp['BGP.local_pref']).toBe('300');
    expect(list(ibgp['BGP.community'])).toBe('(64512,100)');
    // What the node's BIRD sends each peer, after the export filter: 300 to the iBGP peer only.
    const sent = async (peer: string) =>
      parseRoutesAll(
        (await nodeClient().command(`show route export ${peerProtocolName(peer)}.ipv4 all`)).lines,
      ).find((r) => r.prefix === '192.0.2.16/28')?.attributes;
    expect((await sent('203.0.113.1'))?.['BGP.local_pref']).toBe('300');
    expect(await sent(router.router6)).toBeDefined();
    expect((await sent(router.router6))?.['BGP.local_pref']).toBeUndefined();
    // The router holds its eBGP routes at its own default (eBGP does not carry LOCAL_PREF).
    expect(route('192.0.2.16/28', 'node')['BGP.local_pref']).toBe('100');
  });
});
