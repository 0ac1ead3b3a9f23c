// SlicePeers with a peer relay, the relay played by streams the test writes (the real relay
// server against this client: e2e/src/peer-relay.test.ts).
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PassThrough } from 'node:stream';
import { ENDPOINT_SLICES, PEERSLICES } from '@flock/kube';
import { createMemoryLogger, FakeApiServer } from '@flock/kube/testing';
import { eventually } from '@flock/testkit';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { ownPodCache } from '../node/pods.js';
import { SlicePeers } from './slice-peers.js';

const dir = mkdtempSync(join(tmpdir(), 'flock-relay-peers-'));
writeFileSync(join(dir, 'ca.crt'), 'CA');
writeFileSync(join(dir, 'token'), 'agent-token\n');
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const EPOCH = '0123abcd-0000';
const record = (name: string, labels: Record<string, string> = { app: name }) => ({
  name,
  uid: `uid-${name}`,
  node: 'n2',
  ips: ['2001:db8::1'],
  labels,
});
const sliceObject = (name: string, pods: ReturnType<typeof record>[]) => ({
  apiVersion: 'flock.fritzlab.net/v1alpha1',
  kind: 'PeerSlice',
  metadata: { name },
  spec: { namespace: 'team-a', pods },
});
const endpoints = (...hosts: string[]) => ({
  apiVersion: 'discovery.k8s.io/v1',
  kind: 'EndpointSlice',
  metadata: {
    namespace: 'flock-system',
    name: 'flock-peer-relay-x',
    labels: { 'kubernetes.io/service-name': 'flock-peer-relay' },
  },
  ports: [{ port: 5474 }],
  endpoints: hosts.map((h) => ({ addresses: [h], conditions: { ready: true } })),
});
const line = (e: object) => `${JSON.stringify(e)}\n`;

/** A relay played by the test: every GET the agent sends, and the stream answering it. */
function fakeRelay() {
  const gets: { host: string; path: string; token: string; body: PassThrough }[] = [];
  return {
    gets,
    open: (t: { host: string }) => async (path: string, token: string) => {
      const body = new PassThrough();
      gets.push({ host: t.host, path, token, body });
      return body;
    },
    last: () => gets.at(-1) as (typeof gets)[number],
  };
}

let stop: (() => Promise<unknown>) | undefined;
afterEach(async () => {
  await stop?.();
  stop = undefined;
});

function setup(server: FakeApiServer, relay: ReturnType<typeof fakeRelay>) {
  const logger = createMemoryLogger();
  const own = ownPodCache(server, logger, 'n1');
  const peers = new SlicePeers({
    own,
    nodeName: 'n1',
    transport: server,
    logger,
    relay: {
      namespace: 'flock-system',
      service: 'flock-peer-relay',
      caFile: join(dir, 'ca.crt'),
      tokenFile: join(dir, 'token'),
      open: relay.open,
      tickMs: 10_000,
    },
    fallbackMs: 400,
  });
  const names = () => peers.list().map((p) => `${p.metadata.name}:${p.metadata.labels?.['app']}`);
  const events: string[] = [];
  peers.addHandler({
    onAdd: (p) => events.push(`add ${p.metadata.name}`),
    onUpdate: (_, p) => events.push(`update ${p.metadata.name}`),
    onDelete: (p) => events.push(`delete ${p.metadata.name}`),
  });
  stop = () => Promise.all([own.stop(), peers.stop()]);
  own.start();
  return { peers, logger, names, events };
}

/** Lists and watches of the PeerSlices. */
const sliceWatches = (server: FakeApiServer) =>
  server.requests.filter((r) => r.path.endsWith('/peerslices')).length;

describe('SlicePeers with a peer relay', () => {
  it('takes the records from the relay and watches no PeerSlice while it answers', async () => {
    const server = new FakeApiServer();
    server.register(PEERSLICES);
    server.putObject(ENDPOINT_SLICES, endpoints('10.0.0.7'));
    server.putObject(PEERSLICES, sliceObject('s1', [record('stale')]));
    const relay = fakeRelay();
    const { peers, names, events } = setup(server, relay);
    await peers.start();
    await eventually('a GET', () => relay.gets.length === 1);
    expect(relay.last()).toMatchObject({
      host: '10.0.0.7',
      path: '/v1/peers',
      token: 'agent-token',
    });
    relay
      .last()
      .body.write(
        line({ t: 'begin', epoch: EPOCH, full: true, seq: 4 }) +
          line({ t: 'put', ns: 'team-a', pod: record('web') }) +
          line({ t: 'put', ns: 'team-a', pod: { ...record('mine'), node: 'n1' } }) +
          line({ t: 'synced', seq: 4 }),
      );
    await peers.synced;
    expect(names()).toEqual(['web:web']);
    relay
      .last()
      .body.write(
        line({ t: 'put', seq: 5, ns: 'team-a', pod: record('web', { app: 'v2' }) }) +
          line({ t: 'put', seq: 6, ns: 'team-a', pod: record('db') }) +
          line({ t: 'del', seq: 7, ns: 'team-a', name: 'db' }),
      );
    await eventually('changes', () => events.includes('delete db'));
    expect(events).toEqual(['add web', 'update web', 'add db', 'delete db']);
    await new Promise((r) => setTimeout(r, 600)); // past fallbackMs
    expect(sliceWatches(server)).toBe(0);
    expect(peers.slices).toBeUndefined();

    // The stream ends: the next GET resumes from change 7.
    relay.last().body.end();
    await eventually('a second GET', () => relay.gets.length === 2);
    expect(relay.last().path).toBe(`/v1/peers?epoch=${EPOCH}&since=7`);
    relay
      .last()
      .body.write(
        line({ t: 'begin', epoch: EPOCH, full: false, seq: 7 }) +
          line({ t: 'put', seq: 8, ns: 'team-a', pod: record('api') }),
      );
    await eventually('resumed', () => names().includes('api:api'));

    // A change skipped: the stream is dropped and the next starts from a snapshot.
    relay.last().body.write(line({ t: 'put', seq: 10, ns: 'team-a', pod: record('x') }));
    await eventually('a third GET', () => relay.gets.length === 3);
    expect(relay.last().path).toBe('/v1/peers');
    expect(names()).not.toContain('x:x');
  });

  it('waits for a snapshot that keeps coming, and leaves a relay that went silent', async () => {
    const server = new FakeApiServer();
    server.register(PEERSLICES);
    server.putObject(ENDPOINT_SLICES, endpoints('10.0.0.7'));
    server.putObject(PEERSLICES, sliceObject('s1', [record('web')]));
    const relay = fakeRelay();
    const { peers, names } = setup(server, relay);
    await peers.start();
    await eventually('a GET', () => relay.gets.length === 1);
    relay.last().body.write(line({ t: 'begin', epoch: EPOCH, full: true, seq: 1 }));
    // 1.2 s of a slow snapshot, three times fallbackMs: no PeerSlice watch meanwhile.
    for (let i = 0; i < 12; i++) {
      await new Promise((r) => setTimeout(r, 100));
      relay.last().body.write(line({ t: 'put', ns: 'team-a', pod: record(`p${i}`) }));
    }
    expect(sliceWatches(server)).toBe(0);
    // Silent now (the stream open, nothing coming): the slices.
    await eventually('from the slices', () => names().join() === 'web:web', { timeoutMs: 5_000 });
  });

  it('watches the PeerSlices while no relay answers, and stops once one has given it all', async () => {
    const server = new FakeApiServer();
    server.register(PEERSLICES);
    server.putObject(ENDPOINT_SLICES, endpoints('10.0.0.7'));
    server.putObject(PEERSLICES, sliceObject('s1', [record('web'), record('db')]));
    const relay = fakeRelay();
    const { peers, names, logger } = setup(server, relay);
    await peers.start();
    await eventually('a GET', () => relay.gets.length === 1);
    relay
      .last()
      .body.write(
        line({ t: 'begin', epoch: EPOCH, full: true, seq: 1 }) +
          line({ t: 'put', ns: 'team-a', pod: record('web') }) +
          line({ t: 'put', ns: 'team-a', pod: record('gone') }) +
          line({ t: 'synced', seq: 1 }),
      );
    await peers.synced;
    // The relay dies and none comes back: after fallbackMs the slices, which replace its state.
    relay.last().body.destroy(new Error('connection reset'));
    server.putObject(ENDPOINT_SLICES, endpoints());
    await eventually('from the slices', () => names().sort().join() === 'db:db,web:web');
    expect(logger.find('warn', 'no peer relay')).toHaveLength(1);
    server.putObject(PEERSLICES, sliceObject('s1', [record('web', { app: 'v2' })]));
    await eventually('a slice change', () => names().join() === 'web:v2');

    // A relay is back: a snapshot (not a resume: the slices changed the peers meanwhile).
    const before = relay.gets.length;
    server.putObject(ENDPOINT_SLICES, endpoints('10.0.0.8'));
    await eventually('a GET to the new relay', () => relay.gets.length > before);
    expect(relay.last()).toMatchObject({ host: '10.0.0.8', path: '/v1/peers' });
    relay
      .last()
      .body.write(
        line({ t: 'begin', epoch: 'fedc0000-0000', full: true, seq: 9 }) +
          line({ t: 'put', ns: 'team-a', pod: record('web', { app: 'v3' }) }) +
          line({ t: 'synced', seq: 9 }),
      );
    await eventually('from the relay', () => names().join() === 'web:v3');
    await eventually('the slices no longer watched', () => peers.slices === undefined);
    // A slice change now reaches no peer: the relay is the source.
    server.putObject(PEERSLICES, sliceObject('s1', [record('web', { app: 'v4' })]));
    await new Promise((r) => setTimeout(r, 100));
    expect(names()).toEqual(['web:v3']);

    // Gone again: the slices once more (a new watch), which say v4.
    relay.last().body.destroy(new Error('connection reset'));
    server.putObject(ENDPOINT_SLICES, endpoints());
    await eventually('from the slices again', () => names().join() === 'web:v4');
    expect(logger.find('warn', 'no peer relay')).toHaveLength(2);
  });
});
