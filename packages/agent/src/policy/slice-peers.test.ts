import { ANYCAST_ANNOTATION, peerOfPod, podOfPeer, type Pod } from '@flock/api';
import { PEERSLICES, PODS } from '@flock/kube';
import { createMemoryLogger, FakeApiServer } from '@flock/kube/testing';
import { eventually } from '@flock/testkit';
import fc from 'fast-check';
import { afterEach, describe, expect, it } from 'vitest';
import { ownPodCache, trimPod } from '../node/pods.js';
import { samePolicyPod } from './caches.js';
import { SlicePeers } from './slice-peers.js';

const label = fc.stringMatching(/^[a-z][a-z0-9]{0,6}$/);
const rawPod = fc.record({
  name: fc.stringMatching(/^[a-z][a-z0-9-]{0,10}[a-z0-9]$/),
  labels: fc.dictionary(label, label, { maxKeys: 70 }),
  ports: fc.array(
    fc.record({
      name: fc.option(label, { nil: undefined }),
      containerPort: fc.integer({ min: 1, max: 65535 }),
      protocol: fc.option(fc.constantFrom('TCP' as const, 'UDP' as const, 'SCTP' as const), {
        nil: undefined,
      }),
    }),
    { maxLength: 4 },
  ),
  phase: fc.option(fc.constantFrom('Running', 'Pending', 'Succeeded'), { nil: undefined }),
  ips: fc.constantFrom(['2001:db8::1'], ['2001:db8::1', '10.0.0.1']),
  anycast: fc.option(fc.constantFrom('2001:db8:300::53', 'x'.repeat(5000)), { nil: undefined }),
  ready: fc.boolean(),
  terminating: fc.boolean(),
});

type RawPod = typeof rawPod extends fc.Arbitrary<infer T> ? T : never;

function toPod(r: RawPod): Pod {
  return {
    metadata: {
      name: r.name,
      namespace: 'team-a',
      uid: `uid-${r.name}`,
      labels: r.labels,
      ...(r.anycast ? { annotations: { [ANYCAST_ANNOTATION]: r.anycast } } : {}),
      ...(r.terminating ? { deletionTimestamp: '2026-12-06T10:00:00Z' } : {}),
      managedFields: [{ manager: 'kubelet' }],
    },
    spec: {
      nodeName: 'n2',
      containers: [
        { name: 'c', ports: r.ports },
        { name: 'd', ports: r.ports.slice(0, 1) },
      ],
    },
    status: {
      ...(r.phase ? { phase: r.phase } : {}),
      podIPs: r.ips.map((ip) => ({ ip })),
      conditions: [{ type: 'Ready', status: r.ready ? 'True' : 'False' }],
    },
  };
}

describe('peer records', () => {
  it('stand for a pod exactly as far as policy reads it', () => {
    fc.assert(
      fc.property(rawPod, (r) => {
        const pod = toPod(r);
        const record = peerOfPod(pod);
        expect(record).toBeDefined();
        const back = trimPod(podOfPeer('team-a', record!));
        expect(samePolicyPod(back, trimPod(pod))).toBe(true);
        expect(back.spec?.nodeName).toBe('n2');
      }),
    );
  });

  it('leave out what is no peer: host network, no address, no node', () => {
    const r = fc.sample(rawPod, 1)[0]!;
    const pod = toPod(r);
    expect(peerOfPod({ ...pod, spec: { ...pod.spec, hostNetwork: true } })).toBeUndefined();
    expect(peerOfPod({ ...pod, status: { phase: 'Pending' } })).toBeUndefined();
    expect(peerOfPod({ ...pod, spec: { containers: [] } })).toBeUndefined();
  });
});

const record = (name: string, node: string, labels: Record<string, string> = { app: name }) => ({
  name,
  uid: `uid-${name}`,
  node,
  ips: ['2001:db8::1'],
  labels,
});
const slice = (name: string, pods: ReturnType<typeof record>[]) => ({
  apiVersion: 'flock.fritzlab.net/v1alpha1',
  kind: 'PeerSlice',
  metadata: { name },
  spec: { namespace: 'team-a', pods },
});

let stop: (() => Promise<unknown>) | undefined;
afterEach(async () => {
  await stop?.();
  stop = undefined;
});

describe('SlicePeers', () => {
  it("lists this node's pods from its own cache and the others' from the slices", async () => {
    const server = new FakeApiServer();
    server.register(PEERSLICES);
    server.putObject(PODS, {
      metadata: { namespace: 'team-a', name: 'local', uid: 'u-local', labels: { app: 'local' } },
      spec: { nodeName: 'n1' },
      status: { podIPs: [{ ip: '2001:db8:1::1' }] },
    });
    server.putObject(PODS, {
      metadata: { namespace: 'team-a', name: 'far', uid: 'u-far' },
      spec: { nodeName: 'n2' },
      status: { podIPs: [{ ip: '2001:db8:2::1' }] },
    });
    // The slice names the local pod too (with stale labels): the own cache wins.
    server.putObject(
      PEERSLICES,
      slice('s1', [record('local', 'n1', { app: 'stale' }), record('far', 'n2')]),
    );
    const logger = createMemoryLogger();
    const own = ownPodCache(server, logger, 'n1');
    const peers = new SlicePeers({ own, nodeName: 'n1', transport: server, logger });
    stop = () => Promise.all([own.stop(), peers.stop()]);
    const events: string[] = [];
    peers.addHandler({
      onAdd: (p) => events.push(`add ${p.metadata.name}`),
      onUpdate: (_, p) => events.push(`update ${p.metadata.name}`),
      onDelete: (p) => events.push(`delete ${p.metadata.name}`),
    });
    own.start();
    await peers.start();
    await peers.synced;
    // The own-node watch asked for this node's pods alone.
    expect(
      server.requests.some(
        (r) => r.path === '/api/v1/pods' && r.query['fieldSelector'] === 'spec.nodeName=n1',
      ),
    ).toBe(true);
    expect(own.list().map((p) => p.metadata.name)).toEqual(['local']);
    const byName = () =>
      Object.fromEntries(peers.list().map((p) => [p.metadata.name, p.metadata.labels?.['app']]));
    expect(byName()).toEqual({ local: 'local', far: 'far' });
    expect(peers.getObject('far', 'team-a')?.spec?.nodeName).toBe('n2');
    const far = peers.getObject('far', 'team-a');

    // A pod moves to another slice, unchanged: same object, no event.
    events.length = 0;
    server.putObject(PEERSLICES, slice('s2', [record('far', 'n2')]));
    server.putObject(PEERSLICES, slice('s1', [record('local', 'n1')]));
    await new Promise((r) => setTimeout(r, 100));
    expect(peers.getObject('far', 'team-a')).toBe(far);
    expect(events).toEqual([]);

    // Changed: an update; gone: a delete.
    server.putObject(PEERSLICES, slice('s2', [record('far', 'n2', { app: 'new' })]));
    await eventually('update', () => events.includes('update far'));
    expect(byName()['far']).toBe('new');
    server.deleteObject(PEERSLICES, 's2');
    await eventually('delete', () => events.includes('delete far'));
    expect(byName()).toEqual({ local: 'local' });
  });
});

describe('SlicePeers without the PeerSlice CRD', () => {
  it('takes the peers from a watch of every pod, and says so', async () => {
    const server = new FakeApiServer();
    server.putObject(PODS, {
      metadata: { namespace: 'team-a', name: 'far', uid: 'u-far', labels: { app: 'far' } },
      spec: { nodeName: 'n2' },
      status: { podIPs: [{ ip: '2001:db8:2::1' }] },
    });
    const logger = createMemoryLogger();
    const own = ownPodCache(server, logger, 'n1');
    const peers = new SlicePeers({ own, nodeName: 'n1', transport: server, logger });
    stop = () => Promise.all([own.stop(), peers.stop()]);
    own.start();
    await peers.start();
    await peers.synced;
    expect(peers.list().map((p) => p.metadata.name)).toEqual(['far']);
    expect(logger.find('error', 'PeerSlice CRD is not installed')).toHaveLength(1);
  });
});
