import type { Pod } from '@flock/api';
import { pod as buildPod } from '@flock/api/testing';
import { afterEach, describe, expect, it } from 'vitest';
import { Cache } from './cache.js';
import { CacheView } from './cache-view.js';
import { FakeApiServer } from '../../testing/fake-apiserver.js';
import { resourceListWatch } from './listwatch-source.js';
import { createMemoryLogger } from '../../testing/memory-logger.js';
import { PODS } from '../core/resource.js';

const pod = (name: string, nodeName: string, phase = 'Running') =>
  buildPod({ name, namespace: 'ns', nodeName, phase });

let cache: Cache<Pod> | undefined;
afterEach(() => cache?.stop());

async function started(server: FakeApiServer): Promise<Cache<Pod>> {
  cache = new Cache<Pod>({
    source: resourceListWatch(server, PODS),
    logger: createMemoryLogger(),
    indexers: { node: (p) => (p.spec?.nodeName ? [p.spec.nodeName] : []) },
  });
  cache.start();
  await cache.synced;
  return cache;
}

/** Calls as strings: "add a", "update a Running->Succeeded", "delete a". */
function record(view: CacheView<Pod>, replay = true): string[] {
  const calls: string[] = [];
  const phase = (p: Pod) => p.status?.phase ?? '';
  view.addHandler(
    {
      onAdd: (p) => calls.push(`add ${p.metadata.name}`),
      onUpdate: (a, b) => calls.push(`update ${a.metadata.name} ${phase(a)}->${phase(b)}`),
      onDelete: (p) => calls.push(`delete ${p.metadata.name}`),
    },
    { replay },
  );
  return calls;
}

const until = async (what: () => boolean) => {
  for (let i = 0; i < 200 && !what(); i++) await new Promise((r) => setTimeout(r, 5));
  expect(what()).toBe(true);
};

describe('CacheView', () => {
  it('gets, lists and replays only the objects under its index value', async () => {
    const server = new FakeApiServer();
    server.putObject(PODS, pod('mine', 'n1'));
    server.putObject(PODS, pod('other', 'n2'));
    const view = new CacheView(await started(server), 'node', 'n1');
    expect(view.hasSynced).toBe(true);
    expect(view.getObject('mine', 'ns')?.metadata.name).toBe('mine');
    expect(view.get('ns/mine')?.metadata.name).toBe('mine');
    expect(view.getObject('other', 'ns')).toBeUndefined();
    expect(view.get('ns/other')).toBeUndefined();
    expect(view.list().map((p) => p.metadata.name)).toEqual(['mine']);
    expect(record(view)).toEqual(['add mine']);
    expect(record(view, false)).toEqual([]);
  });

  it('an object that enters the subset is an add, one that leaves it a delete', async () => {
    const server = new FakeApiServer();
    const c = await started(server);
    const calls = record(new CacheView(c, 'node', 'n1'));
    server.putObject(PODS, pod('a', '')); // not scheduled yet: not in the view
    server.putObject(PODS, pod('b', 'n2'));
    await until(() => c.size === 2);
    server.putObject(PODS, pod('a', 'n1')); // bound to n1
    await until(() => calls.length === 1);
    server.putObject(PODS, pod('a', 'n1', 'Succeeded'));
    server.putObject(PODS, pod('b', 'n2', 'Succeeded')); // elsewhere: nothing
    await until(() => calls.length === 2);
    server.putObject(PODS, pod('a', 'n3')); // leaves the subset
    server.deleteObject(PODS, 'b', 'ns');
    await until(() => calls.length === 3 && c.size === 1);
    server.putObject(PODS, pod('c', 'n1'));
    await until(() => calls.length === 4);
    server.deleteObject(PODS, 'c', 'ns');
    await until(() => calls.length === 5);
    expect(calls).toEqual([
      'add a',
      'update a Running->Succeeded',
      'delete a',
      'add c',
      'delete c',
    ]);
  });

  it('refuses an index the cache does not have', async () => {
    const c = await started(new FakeApiServer());
    expect(() => new CacheView(c, 'nope', 'x')).toThrow(/no index/);
    expect(() => c.inIndex('nope', 'x', pod('a', 'n1'))).toThrow(/no index/);
  });
});
