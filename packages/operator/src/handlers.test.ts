import { API_VERSION, NodeConfig, Pool, POOL_KIND } from '@flock/api';
import { Cache, NODECONFIGS, NODES, POOLS, resourceListWatch, type Controller } from '@flock/kube';
import { createMemoryLogger, FakeApiServer } from '@flock/kube/testing';
import { eventually } from '@flock/testkit';
import { afterEach, describe, expect, it } from 'vitest';
import { desiredNodeConfig } from './desired.js';
import { wireHandlers } from './handlers.js';
import { NodeSchema } from './nodes.js';
import { baseSpec, makeNode, makePool } from '../testing/fixtures.js';
import { ClusterView } from './view.js';

let view: ClusterView | undefined;
afterEach(async () => {
  await Promise.all([view?.pools.stop(), view?.nodes.stop(), view?.configs.stop()]);
  view?.close();
});

async function setup() {
  const server = new FakeApiServer();
  const logger = createMemoryLogger();
  const putPool = (name: string, label: string, extra: object = {}) =>
    server.putObject(POOLS, {
      apiVersion: API_VERSION,
      kind: POOL_KIND,
      metadata: { name },
      spec: { ...baseSpec(), nodeSelector: { matchLabels: { pool: label } } },
      ...extra,
    });
  putPool('a', 'a');
  putPool('b', 'b');
  const node = (name: string, labels: Record<string, string>, extra: object = {}) =>
    server.putObject(NODES, {
      apiVersion: 'v1',
      kind: 'Node',
      metadata: { name, labels },
      ...extra,
    });
  node('n0', { pool: 'a' });
  const nc = desiredNodeConfig(makePool('a'), makeNode('n0', { pool: 'a' }), {
    cidr6: '2001:db8:100::/64',
  });
  server.putObject(NODECONFIGS, nc);
  view = new ClusterView(
    new Cache({ source: resourceListWatch(server, POOLS), schema: Pool, logger }),
    new Cache({ source: resourceListWatch(server, NODES), schema: NodeSchema, logger }),
    new Cache({ source: resourceListWatch(server, NODECONFIGS), schema: NodeConfig, logger }),
  );
  view.pools.start();
  view.nodes.start();
  view.configs.start();
  await view.synced;
  const keys: string[] = [];
  wireHandlers(view, { enqueue: (k: string) => keys.push(k) } as unknown as Controller);
  keys.length = 0; // the replay of what is cached
  const next = async () => {
    await new Promise((r) => setTimeout(r, 20));
    return [...new Set(keys.splice(0))].sort();
  };
  return { server, putPool, node, nc, next };
}

describe('wireHandlers: which pools a change enqueues', () => {
  it("a Node event goes to the pools that select it (before and after) and its NodeConfig's pool", async () => {
    const { node, next } = await setup();
    node('n1', { pool: 'b' });
    expect(await next()).toEqual(['b']);
    node('n0', { pool: 'b' }); // leaves a (which its NodeConfig names), joins b
    expect(await next()).toEqual(['a', 'b']);
    node('n1', { pool: 'b' }, { status: { conditions: [{ type: 'Ready', status: 'True' }] } });
    expect(await next()).toEqual([]); // a heartbeat changes nothing a plan reads
  });

  it('a NodeConfig goes to its pool, not on status writes; its deletion to every pool', async () => {
    const { server, nc, next } = await setup();
    server.putObject(NODECONFIGS, { ...nc, status: { advertisedRoutes: 3 } });
    expect(await next()).toEqual([]);
    server.putObject(NODECONFIGS, { ...nc, spec: { ...nc.spec, bgp: { asn: 65001, peers: [] } } });
    expect(await next()).toEqual(['a']);
    server.deleteObject(NODECONFIGS, 'n0');
    expect(await next()).toEqual(['a', 'b']);
  });

  it('a Pool spec change goes to every pool (overlaps, conflicts), a status change to none', async () => {
    const { putPool, next } = await setup();
    putPool('a', 'a', { status: { nodes: 1 } });
    expect(await next()).toEqual([]);
    putPool('a', 'c');
    expect(await next()).toEqual(['a', 'b']);
    putPool('c', 'c');
    await eventually('c enqueued', async () => (await next()).includes('c'));
  });
});
