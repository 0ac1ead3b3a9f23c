// The agent with a BFD speaker beside BIRD (--bfd-config, --bfd-socket), on FakeApiServer and two
// FakeBirds: the peers' BFD goes to the speaker's config and none stays in bird.conf; a multihop
// BFD peer is sourced from the Node's address, or keeps its BGP session without BFD and an
// Event says why.
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { NodeConfig } from '@flock/api';
import { EVENTS, NODECONFIGS, NODES } from '@flock/kube';
import { FakeApiServer, createMemoryLogger } from '@flock/kube/testing';
import { eventually } from '@flock/testkit';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { startAgent, type RunningAgent } from '../agent.js';
import { FakeDatapath } from '../../testing/datapath/fake.js';
import { testAgentConfig } from '../../testing/agent-config.js';
import { FakeBird } from '../../testing/fake-bird.js';
import { NODE_CONFIG } from '../../testing/routing-fixtures.js';

let dir: string;
let api: FakeApiServer;
let bird: FakeBird;
let speaker: FakeBird;
let agent: RunningAgent | undefined;
const logger = createMemoryLogger();

const BFD_PEER = {
  address: '2001:db8:ffff::1',
  asn: 65000,
  multihop: 2,
  bfd: true,
  bfdTimers: { minRxIntervalMs: 200, minTxIntervalMs: 200, multiplier: 3 },
};
const nodeConfig: NodeConfig = {
  ...NODE_CONFIG,
  spec: { ...NODE_CONFIG.spec, bgp: { asn: 64512, peers: [BFD_PEER] } },
};

function putNode(addresses: { type: string; address: string }[]): void {
  api.putObject(NODES, {
    apiVersion: 'v1',
    kind: 'Node',
    metadata: { name: 'node-a' },
    status: { addresses },
  } as never);
}

async function start(): Promise<void> {
  bird.up = true;
  speaker.up = true;
  agent = await startAgent({
    config: testAgentConfig(dir, {
      birdConfigPath: bird.configPath,
      bfdConfigPath: speaker.configPath,
      bfdSocketPath: join(dir, 'bfd.ctl'),
      bgpStatusPeriodMs: '100ms',
    }),
    transport: api,
    datapath: new FakeDatapath(),
    logger,
    bird: { reload: bird, status: bird },
    bfd: speaker,
  });
}

beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'flock-routing-bfd-'));
  api = new FakeApiServer();
  api.putObject(NODECONFIGS, nodeConfig);
  bird = new FakeBird(join(dir, 'bird.conf'));
  speaker = new FakeBird(join(dir, 'bfd.conf'));
});
afterEach(async () => {
  await agent?.stop();
  agent = undefined;
  await rm(dir, { recursive: true, force: true });
});

describe('the agent with a BFD speaker', () => {
  it("BFD runs in the speaker, sourced from the Node's address; the BGP BIRD runs none", async () => {
    putNode([
      { type: 'InternalIP', address: '2001:db8:ff:1::2' },
      { type: 'InternalIP', address: '10.0.0.10' },
    ]);
    await start();
    await eventually('both configs applied', () => bird.configures > 0 && speaker.configures > 0);
    const bgp = await readFile(bird.configPath, 'utf8');
    const bfd = await readFile(speaker.configPath, 'utf8');
    expect(bgp).not.toMatch(/bfd/);
    expect(bgp).toContain('local 2001:db8:ff:1::2 as 64512;');
    expect(bgp).toContain('router id 10.0.0.10;');
    expect(bfd).toContain('  neighbor 2001:db8:ffff::1 local 2001:db8:ff:1::2 multihop on;');
    expect(bfd).toContain('multihop { min rx interval 200 ms;');
    expect(bfd).not.toMatch(/protocol (bgp|static)/);
  });

  it('a Node without an address of the peer family: the session without BFD, and an Event', async () => {
    putNode([{ type: 'InternalIP', address: '10.0.0.10' }]);
    await start();
    await eventually('bird.conf applied', () => bird.configures > 0);
    expect(await readFile(bird.configPath, 'utf8')).toContain('neighbor 2001:db8:ffff::1 as');
    const event = await eventually('a BfdNotConfigured Event', () =>
      api
        .listObjects<{ reason: string; note?: string; message?: string }>(EVENTS)
        .find((e) => e.reason === 'BfdNotConfigured'),
    );
    expect(JSON.stringify(event)).toMatch(/BFD left off.*no IPv6 InternalIP/);
    await eventually('speaker config written', () => speaker.configures > 0);
    expect(await readFile(speaker.configPath, 'utf8')).not.toContain('protocol bfd');
  });
});
