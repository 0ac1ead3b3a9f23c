import { MAX_SLICE_PEERS, PeerSlice } from '@flock/api';
import { PEERSLICES, PODS, type KubeObject } from '@flock/kube';
import { createMemoryLogger, FakeApiServer } from '@flock/kube/testing';
import { eventually } from '@flock/testkit';
import { afterEach, describe, expect, it } from 'vitest';
import { PeerSlicePublisher } from './publisher.js';

const pod = (
  ns: string,
  name: string,
  extra: { labels?: Record<string, string>; ip?: string; ready?: string } = {},
) => ({
  apiVersion: 'v1',
  kind: 'Pod',
  metadata: {
    namespace: ns,
    name,
    uid: `uid-${ns}-${name}`,
    labels: extra.labels ?? { app: name },
  },
  spec: {
    nodeName: 'n1',
    containers: [{ name: 'c', ports: [{ name: 'http', containerPort: 80 }] }],
  },
  status: {
    phase: 'Running',
    podIPs: [{ ip: extra.ip ?? '2001:db8::1' }],
    conditions: [{ type: 'Ready', status: extra.ready ?? 'True' }],
  },
});

const slices = (server: FakeApiServer) =>
  server.listObjects(PEERSLICES).map((s) => PeerSlice.parse(s));
const published = (server: FakeApiServer, ns: string) =>
  slices(server)
    .filter((s) => s.spec.namespace === ns)
    .flatMap((s) => s.spec.pods)
    .map((p) => p.name)
    .sort();

let publisher: PeerSlicePublisher | undefined;
afterEach(async () => {
  await publisher?.stop();
  publisher = undefined;
});

function start(server: FakeApiServer, batchMs = 20) {
  publisher = new PeerSlicePublisher({ transport: server, logger: createMemoryLogger(), batchMs });
  publisher.start();
  return publisher;
}

describe('PeerSlicePublisher', () => {
  it('publishes each namespace’s peers only while leading, and follows changes', async () => {
    const server = new FakeApiServer();
    server.register(PEERSLICES);
    server.putObject(PODS, pod('a', 'web'));
    server.putObject(PODS, pod('a', 'db', { ip: '2001:db8::2' }));
    server.putObject(PODS, pod('b', 'api', { ip: '2001:db8::3' }));
    // Not a peer: no address yet.
    server.putObject(PODS, { ...pod('b', 'new'), status: { phase: 'Pending' } });
    const p = start(server);
    await p.pods.synced;
    await new Promise((r) => setTimeout(r, 100));
    expect(slices(server)).toEqual([]); // a standby writes nothing
    await p.setLeading(true);
    await eventually(
      'published',
      () => published(server, 'a').length === 2 && published(server, 'b').length === 1,
    );
    expect(published(server, 'a')).toEqual(['db', 'web']);
    const web = slices(server)
      .flatMap((s) => s.spec.pods)
      .find((x) => x.name === 'web');
    expect(web).toEqual({
      name: 'web',
      uid: expect.any(String),
      node: 'n1',
      ips: ['2001:db8::1'],
      labels: { app: 'web' },
      ports: [{ name: 'http', port: 80 }],
      phase: 'Running',
    });

    // A readiness flap of an ordinary pod is nothing policy reads: no write.
    const versions = () =>
      slices(server)
        .map((s) => s.metadata.resourceVersion)
        .join();
    const before = versions();
    server.putObject(PODS, pod('a', 'web', { ready: 'False' }));
    await new Promise((r) => setTimeout(r, 150));
    expect(versions()).toBe(before);

    // A label change rewrites its slice; a deleted pod leaves it; the last one deletes it.
    server.putObject(PODS, pod('a', 'web', { labels: { app: 'web', tier: 'front' } }));
    await eventually('label', () =>
      slices(server).some((s) => s.spec.pods.some((x) => x.labels?.['tier'] === 'front')),
    );
    server.deleteObject(PODS, 'api', 'b');
    await eventually('b gone', () => slices(server).every((s) => s.spec.namespace !== 'b'));
  });

  it('puts back a slice someone else changed or deleted', async () => {
    const server = new FakeApiServer();
    server.register(PEERSLICES);
    server.putObject(PODS, pod('a', 'web'));
    const p = start(server);
    await p.setLeading(true);
    await eventually('published', () => published(server, 'a').length === 1);
    const [slice] = slices(server);
    server.putObject(PEERSLICES, { ...slice!, spec: { namespace: 'a', pods: [] } } as KubeObject);
    await eventually('restored', () => published(server, 'a').length === 1);
    server.deleteObject(PEERSLICES, slice?.metadata.name as string);
    await eventually('recreated', () => published(server, 'a').length === 1);
    expect(slices(server)).toHaveLength(1);
  });

  it('coalesces a burst of one namespace into few writes, never two slices for one pod', async () => {
    const server = new FakeApiServer();
    server.register(PEERSLICES);
    const p = start(server, 100);
    await p.setLeading(true);
    for (let i = 0; i < 150; i++)
      server.putObject(PODS, pod('a', `p${i}`, { ip: `2001:db8::${(i + 1).toString(16)}` }));
    await eventually('published', () => published(server, 'a').length === 150);
    await new Promise((r) => setTimeout(r, 300));
    expect(published(server, 'a')).toHaveLength(150); // each once
    const writes = server.requests.filter(
      (r) => r.path.includes('peerslices') && r.method !== 'GET',
    );
    // Without the batch window every pod would be a write of its own (150).
    expect(writes.length).toBeLessThanOrEqual(2 * Math.ceil(150 / MAX_SLICE_PEERS));
  });
});
