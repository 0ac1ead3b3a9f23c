// What the agent asks of the API server beside its watches (issue 40, the cheap steps): the
// router ID comes from the agent's watch of its own Node, not from a GET of it per refresh, and
// a pinned ADD reads the claim of its address, never a LIST of the cluster's pods. The real
// agent on FakeApiServer (every request recorded), FakeDatapath and FakeBird.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { AgentRequest } from '@flock/api';
import { NODES, PODS } from '@flock/kube';
import { createMemoryLogger, type FakeApiServer, type RecordedRequest } from '@flock/kube/testing';
import { eventually } from '@flock/testkit';
import { Registry } from 'prom-client';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { startAgent, type RunningAgent } from './agent.js';
import { FakeDatapath } from '../testing/datapath/fake.js';
import { testAgentConfig } from '../testing/agent-config.js';
import { routingApiServer } from '../testing/routing-api.js';
import { FakeBird } from '../testing/fake-bird.js';
import { pod } from '../testing/routing-fixtures.js';

let dir: string;
let api: FakeApiServer;
let registry: Registry;
let datapath: FakeDatapath;
let agent: RunningAgent | undefined;

async function start(over: Record<string, unknown> = {}): Promise<RunningAgent> {
  const bird = new FakeBird(join(dir, 'bird.conf'));
  bird.up = true;
  agent = await startAgent({
    config: testAgentConfig(dir, { birdConfigPath: bird.configPath, ...over }),
    transport: api,
    datapath,
    logger: createMemoryLogger(),
    registry,
    processMetrics: false,
    bird: { reload: bird, status: bird },
  });
  return agent;
}

/** Runs of the bgp-peers loop (the peers' Secrets and the router ID) so far. */
async function refreshes(): Promise<number> {
  const metric = registry.getSingleMetric('flock_agent_loop_runs_total');
  const { values } = (await metric?.get()) ?? { values: [] };
  return values.find((v) => v.labels['loop'] === 'bgp-peers' && v.labels['result'] === 'ok')
    ?.value as number;
}

const routerId = () => agent?.routing.birdModel?.routerId;
const since = (from: number) => api.requests.slice(from);
const nodeGets = (rs: RecordedRequest[]) =>
  rs.filter((r) => r.method === 'GET' && r.path === '/api/v1/nodes/node-a');

const putNode = (address: string) =>
  api.putObject(NODES, {
    apiVersion: 'v1',
    kind: 'Node',
    metadata: { name: 'node-a' },
    status: { addresses: [{ type: 'InternalIP', address }] },
  } as never);

beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'flock-api-requests-'));
  api = routingApiServer(); // node-a's Node has the InternalIP 10.0.0.10
  registry = new Registry();
  datapath = new FakeDatapath();
});
afterEach(async () => {
  await agent?.stop();
  agent = undefined;
  await rm(dir, { recursive: true, force: true });
});

describe("the agent's requests to the API server", () => {
  it('refreshes the router ID from its watch of the Node: no GET of the Node per tick', async () => {
    await start({ sweepPeriodMs: '100ms' });
    await eventually('router ID from the Node', () => routerId() === '10.0.0.10');
    const from = api.requests.length;
    const before = await refreshes();
    await eventually('three more refreshes', async () => (await refreshes()) >= before + 3);
    expect(nodeGets(since(from))).toEqual([]);
  });

  it("follows a change of the Node's addresses at once, through the watch", async () => {
    // No refresh tick in this test: only the Node's watch event can bring the new router ID.
    await start({ sweepPeriodMs: '10m' });
    await eventually('router ID from the Node', () => routerId() === '10.0.0.10');
    const from = api.requests.length;
    putNode('10.0.0.20');
    await eventually('router ID from the new address', () => routerId() === '10.0.0.20');
    expect(nodeGets(since(from))).toEqual([]);
  });

  it('a pinned ADD lists no pods: it claims its address (GET and create the AddressClaim)', async () => {
    await start();
    const stored = api.putObject(
      PODS,
      pod('pinned', { annotations: { 'flock.fritzlab.net/pinned-ip': '2001:db8:200::7' } }),
    );
    const from = api.requests.length;
    const request: AgentRequest = {
      command: 'ADD',
      containerID: 'c-pinned',
      ifName: 'eth0',
      netns: datapath.createNetns('/var/run/netns/pinned'),
      args: {
        K8S_POD_NAMESPACE: 'default',
        K8S_POD_NAME: 'pinned',
        K8S_POD_UID: stored.metadata.uid,
      },
      config: { cniVersion: '1.1.0', name: 'flock', type: 'flock' },
    };
    const result = await agent!.handlers.handle(request);
    expect(result).toMatchObject({ ok: true });
    const made = since(from);
    // A LIST of pods is a GET of a collection: /api/v1/pods or /api/v1/namespaces/NS/pods.
    expect(made.filter((r) => r.method === 'GET' && /\/pods$/.test(r.path))).toEqual([]);
    const claims = made.filter((r) => r.path.includes('/addressclaims'));
    expect(claims.map((r) => r.method)).toEqual(['GET', 'POST']);
  });
});
