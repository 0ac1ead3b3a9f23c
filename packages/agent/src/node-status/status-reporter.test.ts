import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { NodeConfig } from '@flock/api';
import { renderBirdConfig } from '@flock/bird';
import { NODECONFIGS } from '@flock/kube';
import { FakeApiServer, createMemoryLogger } from '@flock/kube/testing';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { FakeBird } from '../../testing/fake-bird.js';
import { NODE_CONFIG, entry } from '../../testing/routing-fixtures.js';
import type { AnnouncerState } from '../routing/announcer.js';
import { SessionPoll } from '../routing/session-poll.js';
import { NodeStatusReporter } from './status-reporter.js';

let dir: string;
let api: FakeApiServer;
let bird: FakeBird;
let announcer: AnnouncerState;
let reporter: NodeStatusReporter;
/** BIRD's sessions, polled by the routing side; each poll refreshes the status. */
let sessions: SessionPoll;

const object = () => NodeConfig.parse(api.getObject(NODECONFIGS, 'node-a'));
const statusWrites = () =>
  api.requests.filter((r) => r.method === 'PATCH' && r.path.endsWith('/status')).length;

beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'flock-status-'));
  api = new FakeApiServer();
  api.putObject(NODECONFIGS, NODE_CONFIG);
  bird = new FakeBird(join(dir, 'bird.conf'));
  await writeFile(
    bird.configPath,
    renderBirdConfig({
      routerId: '192.0.2.1',
      asn: 64512,
      peers: [{ address: '2001:db8:ffff::1', asn: 65000 }],
      aggregates: ['2001:db8:100::/64'],
      pinned: [],
      anycast: [],
    }),
  );
  await bird.start();
  announcer = { status: 'applied' };
  reporter = new NodeStatusReporter(deps());
  sessions = new SessionPoll(bird, 60_000, () => reporter.refresh());
});

function deps(): ConstructorParameters<typeof NodeStatusReporter>[0] {
  return {
    transport: api,
    nodeName: 'node-a',
    logger: createMemoryLogger(),
    nodeConfig: object,
    inputs: () => ({
      generation: 3,
      announcer,
      configuredPeers: NODE_CONFIG.spec.bgp.peers,
      peers: [{ address: '2001:db8:ffff::1', asn: 65000 }],
      peerProblems: [],
      entries: [entry('a')],
      anycastAnnounced: 0,
      advertisedRoutes: 2,
      bgp: sessions.observation,
    }),
    debounceMs: 0,
  };
}

afterEach(async () => {
  await reporter.stop();
  await rm(dir, { recursive: true, force: true });
});

describe('NodeConfig status reporter', () => {
  it('writes the status subresource as flock-agent, and only when it changed', async () => {
    reporter.start();
    await sessions.poll();
    await reporter.flush();
    expect(statusWrites()).toBe(1);
    const write = api.requests.find((r) => r.path.endsWith('/status'))!;
    expect(write.path).toBe('/apis/flock.fritzlab.net/v1alpha1/nodeconfigs/node-a/status');
    expect(write.query).toMatchObject({ fieldManager: 'flock-agent' });
    expect(object().status?.conditions?.find((c) => c.type === 'BGPEstablished')?.status).toBe(
      'True',
    );

    await sessions.poll();
    await reporter.flush();
    await reporter.flush();
    expect(statusWrites()).toBe(1);

    bird.bgpStates.set('peer_2001_db8_ffff__1', 'Active');
    await sessions.poll();
    await reporter.flush();
    expect(statusWrites()).toBe(2);
    expect(object().status?.bgpPeers?.[0]?.state).toBe('Active');
  });

  it('reports BIRD going away and the policy result', async () => {
    reporter.start();
    bird.stop();
    announcer = { status: 'unreachable', message: 'ENOENT', since: 0 };
    await sessions.poll();
    await reporter.flush();
    expect(object().status?.conditions?.find((c) => c.type === 'BGPEstablished')).toMatchObject({
      status: 'False',
      reason: 'BirdUnavailable',
    });
    reporter.setPolicy({ ok: true, reason: 'Applied', message: '1 local pod' });
    await reporter.flush();
    expect(object().status?.conditions?.find((c) => c.type === 'PolicyApplied')).toMatchObject({
      status: 'True',
      reason: 'Applied',
      message: '1 local pod',
    });
  });

  it('does not rewrite a status already on the object (agent restart), rewrites a re-created NodeConfig', async () => {
    reporter.start();
    await sessions.poll();
    await reporter.flush();
    await reporter.stop();
    const restarted = new NodeStatusReporter(deps());
    sessions = new SessionPoll(bird, 60_000, () => restarted.refresh());
    restarted.start();
    await sessions.poll();
    await restarted.flush();
    expect(statusWrites()).toBe(1);

    api.deleteObject(NODECONFIGS, 'node-a');
    api.putObject(NODECONFIGS, NODE_CONFIG);
    await restarted.flush();
    expect(statusWrites()).toBe(2);
    expect(object().status?.allocations?.pods).toBe(1);
    await restarted.stop();
  });

  it('a failed write is retried on the next refresh', async () => {
    reporter.start();
    await sessions.poll();
    const heal = api.inject((r) =>
      r.method === 'PATCH' ? new Error('connection reset') : undefined,
    );
    await reporter.flush();
    expect(object().status).toBeUndefined();
    heal();
    await reporter.flush();
    expect(object().status?.conditions).toHaveLength(3);
  });
});
