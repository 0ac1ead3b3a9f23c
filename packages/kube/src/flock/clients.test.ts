import { nodeConfig } from '@flock/api/testing';
import { describe, expect, it } from 'vitest';
import { applyObject, patchStatus } from '../api/apply.js';
import { InvalidObjectError } from '../api/resource-client.js';
import { createNodeConfigClient, NODECONFIGS } from './clients.js';
import { KubeApiError } from '../core/errors.js';
import { FakeApiServer } from '../../testing/fake-apiserver.js';
import { createMemoryLogger } from '../../testing/memory-logger.js';
import { CONFIGMAPS } from '../core/resource.js';

function setup() {
  const server = new FakeApiServer();
  const logger = createMemoryLogger();
  const nodeConfigs = createNodeConfigClient(server, { fieldManager: 'flock-operator', logger });
  return { server, logger, nodeConfigs };
}

describe('apply helpers and typed clients', () => {
  it('applies with the apply-patch content type, field manager and force', async () => {
    const { server, nodeConfigs } = setup();
    const stored = await nodeConfigs.apply(nodeConfig({ name: 'n1' }));
    expect(stored.spec.pool).toBe('dc1');
    expect(server.requests.at(-1)).toMatchObject({
      method: 'PATCH',
      path: '/apis/flock.fritzlab.net/v1alpha1/nodeconfigs/n1',
      contentType: 'application/apply-patch+yaml',
      query: { fieldManager: 'flock-operator', force: true },
    });
  });

  it('writes status through /status, by apply or by merge patch with a version precondition', async () => {
    const { server, nodeConfigs } = setup();
    const created = await nodeConfigs.apply(nodeConfig({ name: 'n1' }));
    const status = { observedGeneration: 1, advertisedRoutes: 3 };
    const applied = await nodeConfigs.patchStatus('n1', status);
    expect(applied.status).toEqual(status);
    expect(server.requests.at(-1)).toMatchObject({
      path: '/apis/flock.fritzlab.net/v1alpha1/nodeconfigs/n1/status',
      contentType: 'application/apply-patch+yaml',
      body: {
        apiVersion: 'flock.fritzlab.net/v1alpha1',
        kind: 'NodeConfig',
        metadata: { name: 'n1' },
        status,
      },
    });
    const merged = await nodeConfigs.patchStatus('n1', { advertisedRoutes: 4 }, { mode: 'merge' });
    expect(merged.status).toEqual({ observedGeneration: 1, advertisedRoutes: 4 });
    expect(server.requests.at(-1)?.contentType).toBe('application/merge-patch+json');
    const stale = nodeConfigs.patchStatus(
      'n1',
      { advertisedRoutes: 5 },
      {
        mode: 'merge',
        resourceVersion: created.metadata.resourceVersion,
      },
    );
    await expect(stale).rejects.toMatchObject({ code: 409 });
    expect(merged.spec).toEqual(created.spec); // status writes never touch the spec
  });

  it('parses reads with the @flock/api schemas and refuses invalid objects', async () => {
    const { server, nodeConfigs, logger } = setup();
    await nodeConfigs.apply(nodeConfig({ name: 'good' }));
    server.putObject(NODECONFIGS, {
      ...nodeConfig({ name: 'bad' }),
      spec: { pool: 'x', cidr6: 'not-a-cidr' },
    } as never);
    expect((await nodeConfigs.get('good'))?.spec.bgp.peers).toEqual([]);
    expect(await nodeConfigs.get('missing')).toBeUndefined();
    await expect(nodeConfigs.get('bad')).rejects.toBeInstanceOf(InvalidObjectError);
    expect((await nodeConfigs.list()).map((n) => n.metadata.name)).toEqual(['good']);
    expect(logger.find('error', 'invalid object skipped')).toHaveLength(1);
  });

  it('deletes with preconditions and says whether something was deleted', async () => {
    const { nodeConfigs } = setup();
    const n = await nodeConfigs.apply(nodeConfig({ name: 'n1' }));
    await expect(nodeConfigs.delete('n1', { uid: 'not-this-one' })).rejects.toBeInstanceOf(
      KubeApiError,
    );
    expect(await nodeConfigs.delete('n1', { uid: n.metadata.uid as string })).toBe(true);
    expect(await nodeConfigs.delete('n1')).toBe(false);
  });

  it('refuses to apply an object as another kind, and namespaced objects need a namespace', async () => {
    const { server } = setup();
    await expect(
      applyObject(
        server,
        NODECONFIGS,
        { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'x' } },
        { fieldManager: 'm' },
      ),
    ).rejects.toThrow(/cannot apply/);
    await expect(
      patchStatus(server, CONFIGMAPS, 'x', undefined, {}, { fieldManager: 'm' }),
    ).rejects.toThrow(/namespace required/);
  });
});
