import { NodePeer } from '@flock/api';
import { Cache, NODEPEERS, NODES, resourceListWatch, type KubeObject } from '@flock/kube';
import { createMemoryLogger, FakeApiServer } from '@flock/kube/testing';
import { eventually } from '@flock/testkit';
import { afterEach, describe, expect, it } from 'vitest';
import { NodeSchema, type Node } from '../nodes.js';
import { NodePeerPublisher } from './node-peers.js';

const node = (
  name: string,
  labels: Record<string, string>,
  addresses: string[],
  ready = 'True',
): KubeObject =>
  ({
    apiVersion: 'v1',
    kind: 'Node',
    metadata: { name, labels },
    status: {
      addresses: [
        ...addresses.map((address) => ({ type: 'InternalIP', address })),
        { type: 'Hostname', address: name },
      ],
      conditions: [{ type: 'Ready', status: ready }],
    },
  }) as KubeObject;

const peers = (server: FakeApiServer) =>
  Object.fromEntries(
    server
      .listObjects(NODEPEERS)
      .map((o) => NodePeer.parse(o))
      .map((p) => [p.metadata.name, p]),
  );
const writes = (server: FakeApiServer) =>
  server.requests.filter((r) => r.method !== 'GET' && r.path.includes('/nodepeers')).length;

let publisher: NodePeerPublisher | undefined;
let nodes: Cache<Node> | undefined;
afterEach(async () => {
  await publisher?.stop();
  await nodes?.stop();
  publisher = nodes = undefined;
});

function start(server: FakeApiServer) {
  const logger = createMemoryLogger();
  nodes = new Cache<Node>({ source: resourceListWatch(server, NODES), schema: NodeSchema, logger });
  publisher = new NodePeerPublisher({ transport: server, logger, nodes });
  nodes.start();
  publisher.start();
  return publisher;
}

describe('NodePeerPublisher', () => {
  it('publishes each Node’s labels and IP addresses only while leading, owned by the Node', async () => {
    const server = new FakeApiServer();
    server.register(NODEPEERS);
    const n1 = server.putObject(NODES, node('n1', { zone: 'a' }, ['2001:db8::1', '192.0.2.1']));
    server.putObject(NODES, node('n2', {}, ['2001:db8::2']));
    const p = start(server);
    await p.peers.synced;
    await new Promise((r) => setTimeout(r, 50));
    expect(peers(server)).toEqual({});
    await p.setLeading(true);
    await eventually('both published', () => Object.keys(peers(server)).length === 2);
    const one = peers(server)['n1'];
    expect(one?.spec).toEqual({ labels: { zone: 'a' }, addresses: ['2001:db8::1', '192.0.2.1'] });
    expect(one?.metadata.ownerReferences).toEqual([
      { apiVersion: 'v1', kind: 'Node', name: 'n1', uid: n1.metadata.uid },
    ]);
    expect(peers(server)['n2']?.spec).toEqual({ addresses: ['2001:db8::2'] });
  });

  it('rewrites a NodePeer on a label or address change, never on a status report', async () => {
    const server = new FakeApiServer();
    server.register(NODEPEERS);
    server.putObject(NODES, node('n1', { zone: 'a' }, ['2001:db8::1']));
    const p = start(server);
    await p.setLeading(true);
    await eventually('published', () => peers(server)['n1'] !== undefined);
    const before = writes(server);
    // A kubelet's status report: conditions move, labels and addresses do not.
    server.putObject(NODES, node('n1', { zone: 'a' }, ['2001:db8::1'], 'False'));
    await new Promise((r) => setTimeout(r, 100));
    expect(writes(server)).toBe(before);
    server.putObject(NODES, node('n1', { zone: 'b' }, ['2001:db8::1']));
    await eventually('the label', () => peers(server)['n1']?.spec.labels?.['zone'] === 'b');
    server.putObject(NODES, node('n1', { zone: 'b' }, ['2001:db8::7']));
    await eventually('the address', () => peers(server)['n1']?.spec.addresses[0] === '2001:db8::7');
    expect(writes(server)).toBe(before + 2);
  });

  it('deletes the NodePeer of a Node that is gone, and puts back one edited or deleted by others', async () => {
    const server = new FakeApiServer();
    server.register(NODEPEERS);
    server.putObject(NODES, node('n1', {}, ['2001:db8::1']));
    server.putObject(NODES, node('n2', {}, ['2001:db8::2']));
    // Left from a Node deleted while no operator ran.
    server.putObject(NODEPEERS, {
      apiVersion: 'flock.fritzlab.net/v1alpha1',
      kind: 'NodePeer',
      metadata: { name: 'gone' },
      spec: { addresses: ['2001:db8::99'] },
    } as KubeObject);
    const p = start(server);
    await p.setLeading(true);
    await eventually(
      'n1, n2 and no other',
      () => Object.keys(peers(server)).sort().join() === 'n1,n2',
    );
    server.deleteObject(NODES, 'n2');
    await eventually('n2 gone', () => peers(server)['n2'] === undefined);
    const forged = { ...peers(server)['n1'], spec: { addresses: ['2001:db8::66'] } } as KubeObject;
    server.putObject(NODEPEERS, forged);
    await eventually('put back', () => peers(server)['n1']?.spec.addresses[0] === '2001:db8::1');
    server.deleteObject(NODEPEERS, 'n1');
    await eventually('recreated', () => peers(server)['n1']?.spec.addresses[0] === '2001:db8::1');
  });

  it('follows a Node recreated under the same name to its new owner', async () => {
    const server = new FakeApiServer();
    server.register(NODEPEERS);
    server.putObject(NODES, node('n1', {}, ['2001:db8::1']));
    const p = start(server);
    await p.setLeading(true);
    await eventually('published', () => peers(server)['n1'] !== undefined);
    server.deleteObject(NODES, 'n1');
    const again = server.putObject(NODES, node('n1', {}, ['2001:db8::1']));
    await eventually(
      'owned by the new Node',
      () => peers(server)['n1']?.metadata.ownerReferences?.[0]?.['uid'] === again.metadata.uid,
    );
  });

  it('stops writing when it stops leading', async () => {
    const server = new FakeApiServer();
    server.register(NODEPEERS);
    const p = start(server);
    await p.setLeading(true);
    await p.setLeading(false);
    server.putObject(NODES, node('n1', {}, ['2001:db8::1']));
    await new Promise((r) => setTimeout(r, 100));
    expect(peers(server)).toEqual({});
  });
});
