// The fake API server behaves like the real one where flock depends on it (the cluster tier
// checks the same behaviours against a real kube-apiserver).
import { describe, expect, it } from 'vitest';
import { KubeApiError } from '../src/core/errors.js';
import { FakeApiServer } from './fake-apiserver.js';
import { CONFIGMAPS, PODS, SERVICES, resourcePath, objectPath } from '../src/core/resource.js';
import { NODECONFIGS } from '../src/flock/clients.js';
import { PatchStrategy, type WatchEvent } from '../src/transport/transport.js';

type Obj = {
  apiVersion?: string;
  kind?: string;
  metadata: Record<string, unknown> & { name: string; resourceVersion?: string };
  spec?: Record<string, unknown>;
  status?: Record<string, unknown>;
  data?: Record<string, string>;
};

const NS_CM = resourcePath(CONFIGMAPS, { namespace: 'ns' });
const cmPath = (name: string) => objectPath(CONFIGMAPS, name, 'ns');
const ncPath = (name: string, sub?: string) => objectPath(NODECONFIGS, name, undefined, sub);
const nc = (name: string, spec: Record<string, unknown>) => ({
  apiVersion: 'flock.fritzlab.net/v1alpha1',
  kind: 'NodeConfig',
  metadata: { name },
  spec,
});

async function code(p: Promise<unknown>): Promise<string> {
  try {
    await p;
    return 'ok';
  } catch (e) {
    return e instanceof KubeApiError ? `${e.code} ${e.reason}` : `thrown ${String(e)}`;
  }
}

describe('FakeApiServer', () => {
  it('creates, reads and refuses duplicates; versions grow; generation counts spec changes', async () => {
    const s = new FakeApiServer();
    const created = (await s.request({
      method: 'POST',
      path: NS_CM,
      body: { metadata: { name: 'a' }, data: { x: '1' } },
    })) as Obj;
    expect(created).toMatchObject({
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: { name: 'a', namespace: 'ns', generation: 1 },
    });
    expect(created.metadata['uid']).toMatch(/^[0-9a-f-]{36}$/);
    expect(
      await code(s.request({ method: 'POST', path: NS_CM, body: { metadata: { name: 'a' } } })),
    ).toBe('409 AlreadyExists');
    expect(await code(s.request({ method: 'GET', path: cmPath('b') }))).toBe('404 NotFound');
    const n = s.putObject(NODECONFIGS, nc('n1', { pool: 'p' }));
    const relabelled = s.putObject(NODECONFIGS, {
      ...n,
      metadata: { ...n.metadata, labels: { a: 'b' } },
    });
    expect(relabelled.metadata).toMatchObject({ generation: 1 });
    const changed = s.putObject(NODECONFIGS, { ...relabelled, spec: { pool: 'q' } });
    expect(changed.metadata).toMatchObject({ generation: 2 });
    expect(Number(changed.metadata.resourceVersion)).toBeGreaterThan(
      Number(relabelled.metadata.resourceVersion),
    );
  });

  it('replaces with optimistic concurrency, and ignores writes that change nothing', async () => {
    const s = new FakeApiServer();
    const a = s.putObject(CONFIGMAPS, {
      metadata: { name: 'a', namespace: 'ns' },
      data: { x: '1' },
    });
    const put = (o: unknown) => s.request({ method: 'PUT', path: cmPath('a'), body: o });
    expect(await code(put({ ...a, data: { x: '2' } }))).toBe('ok');
    expect(await code(put({ ...a, data: { x: '3' } }))).toBe('409 Conflict'); // stale version
    const rv = s.resourceVersion;
    const same = (await s.request({ method: 'GET', path: cmPath('a') })) as Obj;
    await put(same);
    expect(s.resourceVersion).toBe(rv);
    expect(await code(put({ metadata: { name: 'other' } }))).toBe('400 BadRequest');
  });

  it('keeps status and spec apart with the status subresource', async () => {
    const s = new FakeApiServer();
    s.putObject(NODECONFIGS, nc('n1', { pool: 'p' }));
    await s.request({
      method: 'PATCH',
      path: ncPath('n1'),
      contentType: PatchStrategy.MergePatch,
      body: { spec: { pool: 'q' }, status: { x: 1 } },
    });
    expect(s.getObject<Obj>(NODECONFIGS, 'n1')).toMatchObject({ spec: { pool: 'q' } });
    expect(s.getObject<Obj>(NODECONFIGS, 'n1')?.status).toBeUndefined();
    await s.request({
      method: 'PATCH',
      path: ncPath('n1', 'status'),
      contentType: PatchStrategy.MergePatch,
      body: { spec: { pool: 'z' }, status: { x: 1 } },
    });
    expect(s.getObject<Obj>(NODECONFIGS, 'n1')).toMatchObject({
      spec: { pool: 'q' },
      status: { x: 1 },
    });
  });

  it("serves Services with a status subresource (a load balancer's address is status)", async () => {
    const s = new FakeApiServer();
    const svc = { apiVersion: 'v1', kind: 'Service', metadata: { name: 'web', namespace: 'ns' } };
    s.putObject(SERVICES, { ...svc, spec: { type: 'LoadBalancer' } });
    const ingress = { loadBalancer: { ingress: [{ ip: '2001:db8:400::1', ipMode: 'VIP' }] } };
    await s.request({
      method: 'PATCH',
      path: objectPath(SERVICES, 'web', 'ns', 'status'),
      query: { fieldManager: 'test' },
      contentType: PatchStrategy.MergePatch,
      body: { status: ingress },
    });
    await s.request({
      method: 'PATCH',
      path: objectPath(SERVICES, 'web', 'ns'),
      contentType: PatchStrategy.MergePatch,
      body: { spec: { type: 'ClusterIP' }, status: { loadBalancer: {} } },
    });
    expect(s.getObject<Obj>(SERVICES, 'web', 'ns')).toMatchObject({
      spec: { type: 'ClusterIP' },
      status: ingress,
    });
  });

  it('merge-patches (null deletes) with an optional resourceVersion precondition', async () => {
    const s = new FakeApiServer();
    const a = s.putObject(CONFIGMAPS, {
      metadata: { name: 'a', namespace: 'ns' },
      data: { x: '1', y: '2' },
    });
    const patch = (body: unknown) =>
      s.request({
        method: 'PATCH',
        path: cmPath('a'),
        contentType: PatchStrategy.MergePatch,
        body,
      });
    expect(((await patch({ data: { y: null, z: '3' } })) as Obj).data).toEqual({ x: '1', z: '3' });
    expect(
      await code(
        patch({ metadata: { resourceVersion: a.metadata.resourceVersion }, data: { x: '9' } }),
      ),
    ).toBe('409 Conflict');
    expect(
      await code(
        s.request({
          method: 'PATCH',
          path: cmPath('a'),
          contentType: PatchStrategy.JsonPatch,
          body: {},
        }),
      ),
    ).toBe('415 UnsupportedMediaType');
    expect(
      await code(
        s.request({
          method: 'PATCH',
          path: ncPath('x'),
          contentType: PatchStrategy.StrategicMergePatch,
          body: {},
        }),
      ),
    ).toBe('415 UnsupportedMediaType');
  });

  it('server-side apply: creates, removes fields a manager stopped applying, detects conflicts', async () => {
    const s = new FakeApiServer();
    const apply = (manager: string, spec: Record<string, unknown>, force?: boolean) =>
      s.request({
        method: 'PATCH',
        path: ncPath('n1'),
        contentType: PatchStrategy.ServerSideApply,
        query: { fieldManager: manager, ...(force !== undefined ? { force } : {}) },
        body: nc('n1', spec),
      });
    expect(await code(apply('op', { pool: 'p', cidr6: 'a', anycastCIDRs: ['x'] }))).toBe('ok');
    await apply('op', { pool: 'p', cidr6: 'a' });
    expect(s.getObject<Obj>(NODECONFIGS, 'n1')?.spec).toEqual({ pool: 'p', cidr6: 'a' });
    expect(await code(apply('other', { pool: 'p2' }))).toBe('409 Conflict');
    expect(await code(apply('other', { pool: 'p' }))).toBe('ok'); // same value: shared, no conflict
    expect(await code(apply('other', { pool: 'p2' }, true))).toBe('ok');
    await apply('op', { cidr6: 'a' }); // op no longer owns pool: other's value stays
    expect(s.getObject<Obj>(NODECONFIGS, 'n1')?.spec).toEqual({ pool: 'p2', cidr6: 'a' });
    expect(
      await code(
        s.request({
          method: 'PATCH',
          path: ncPath('n1'),
          contentType: PatchStrategy.ServerSideApply,
          body: nc('n1', {}),
        }),
      ),
    ).toBe('400 BadRequest');
    expect(
      await code(
        s.request({
          method: 'PATCH',
          path: ncPath('n1', 'status'),
          contentType: PatchStrategy.ServerSideApply,
          query: { fieldManager: 'a' },
          body: nc('nope', {}),
        }),
      ),
    ).toBe('400 BadRequest');
  });

  it('deletes with uid/resourceVersion preconditions', async () => {
    const s = new FakeApiServer();
    const a = s.putObject(CONFIGMAPS, { metadata: { name: 'a', namespace: 'ns' } });
    const del = (preconditions: unknown) =>
      s.request({ method: 'DELETE', path: cmPath('a'), body: { preconditions } });
    expect(await code(del({ uid: 'someone-else' }))).toBe('409 Conflict');
    expect(await code(del({ uid: a.metadata.uid }))).toBe('ok');
    expect(await code(del({}))).toBe('404 NotFound');
  });

  it('finalizers: DELETE marks, the write removing the last finalizer deletes, none may be added', async () => {
    const s = new FakeApiServer();
    s.putObject(CONFIGMAPS, { metadata: { name: 'a', namespace: 'ns', finalizers: ['x', 'y'] } });
    const events: string[] = [];
    const stop = s.watch(
      { path: NS_CM, query: { resourceVersion: s.resourceVersion } },
      (e: WatchEvent) => events.push(e.type),
      () => undefined,
    );
    const marked = (await s.request({ method: 'DELETE', path: cmPath('a') })) as Obj;
    expect(marked.metadata['deletionTimestamp']).toMatch(/^\d{4}-\d\d-\d\dT.*Z$/);
    // A second DELETE changes nothing; deletionTimestamp cannot be written by clients.
    expect((await s.request({ method: 'DELETE', path: cmPath('a') })) as Obj).toEqual(marked);
    const patch = (metadata: Record<string, unknown>) =>
      s.request({
        method: 'PATCH',
        path: cmPath('a'),
        contentType: PatchStrategy.MergePatch,
        body: { metadata },
      });
    expect(await code(patch({ finalizers: ['x', 'y', 'z'] }))).toBe('422 Invalid');
    const still = (await patch({ finalizers: ['y'], deletionTimestamp: null })) as Obj;
    expect(still.metadata['deletionTimestamp']).toBe(marked.metadata['deletionTimestamp']);
    await patch({ finalizers: [] });
    expect(s.getObject(CONFIGMAPS, 'a', 'ns')).toBeUndefined();
    expect(events).toEqual(['MODIFIED', 'MODIFIED', 'MODIFIED', 'DELETED']);
    stop();
  });

  it('pages lists from a consistent snapshot; an old continue token is 410 after compaction', async () => {
    const s = new FakeApiServer();
    for (const n of ['a', 'b', 'c', 'd', 'e'])
      s.putObject(CONFIGMAPS, { metadata: { name: n, namespace: 'ns' } });
    type List = { items: Obj[]; metadata: { continue?: string; resourceVersion: string } };
    const page1 = (await s.request({ method: 'GET', path: NS_CM, query: { limit: 2 } })) as List;
    expect(page1.items.map((i) => i.metadata.name)).toEqual(['a', 'b']);
    expect(page1.items[0]?.kind).toBeUndefined(); // built-in lists omit kind on items
    s.deleteObject(CONFIGMAPS, 'c', 'ns');
    const page2 = (await s.request({
      method: 'GET',
      path: NS_CM,
      query: { limit: 2, continue: page1.metadata.continue },
    })) as List;
    expect(page2.items.map((i) => i.metadata.name)).toEqual(['c', 'd']);
    expect(page2.metadata.resourceVersion).toBe(page1.metadata.resourceVersion);
    s.compact();
    expect(
      await code(
        s.request({ method: 'GET', path: NS_CM, query: { continue: page2.metadata.continue } }),
      ),
    ).toBe('410 Expired');
  });

  it('supports only the field selectors the real server supports', async () => {
    const s = new FakeApiServer();
    const list = (path: string, fieldSelector: string) =>
      s.request({ method: 'GET', path, query: { fieldSelector } });
    expect(await code(list(resourcePath(PODS), 'spec.nodeName=n1'))).toBe('ok');
    expect(await code(list(NS_CM, 'data.x=1'))).toBe('400 BadRequest');
    expect(await code(list(resourcePath(NODECONFIGS), 'spec.pool=p'))).toBe('400 BadRequest');
  });

  it('watches: replays history from a version, filters by namespace, 410 after compaction', async () => {
    const s = new FakeApiServer();
    s.putObject(CONFIGMAPS, { metadata: { name: 'a', namespace: 'ns' } });
    const from = s.resourceVersion;
    s.putObject(CONFIGMAPS, { metadata: { name: 'b', namespace: 'ns' } });
    s.putObject(CONFIGMAPS, { metadata: { name: 'x', namespace: 'other' } });
    const seen: string[] = [];
    const abort = s.watch(
      { path: NS_CM, query: { resourceVersion: from } },
      (e: WatchEvent) =>
        seen.push(`${e.type} ${String((e.object['metadata'] as Obj['metadata']).name)}`),
      () => seen.push('done'),
    );
    s.deleteObject(CONFIGMAPS, 'a', 'ns');
    await Promise.resolve();
    expect(seen).toEqual(['ADDED b', 'DELETED a']);
    abort();
    s.putObject(CONFIGMAPS, { metadata: { name: 'c', namespace: 'ns' } });
    await Promise.resolve();
    expect(seen).toHaveLength(2); // nothing after abort
    s.compact();
    const late: WatchEvent[] = [];
    s.watch(
      { path: NS_CM, query: { resourceVersion: from } },
      (e) => late.push(e),
      () => late.push({ type: 'BOOKMARK', object: { done: true } }),
    );
    await Promise.resolve();
    expect(late[0]).toMatchObject({ type: 'ERROR', object: { code: 410, reason: 'Expired' } });
    expect(late).toHaveLength(2);
  });

  it('routes like the real server', async () => {
    const s = new FakeApiServer();
    expect(await code(s.request({ method: 'GET', path: '/api/v1/configmaps/a' }))).toBe(
      '404 NotFound',
    );
    expect(
      await code(
        s.request({
          method: 'GET',
          path: '/apis/flock.fritzlab.net/v1alpha1/namespaces/ns/nodeconfigs',
        }),
      ),
    ).toBe('404 NotFound');
    expect(await code(s.request({ method: 'GET', path: '/apis/example.com/v1/widgets' }))).toBe(
      '404 NotFound',
    );
    expect(await code(s.request({ method: 'GET', path: '/api/v1/configmaps' }))).toBe('ok'); // all namespaces
  });

  it('refuses writes its validate hook rejects with 422', async () => {
    const s = new FakeApiServer();
    s.register(NODECONFIGS, {
      validate: (o) => ((o as Obj).spec?.['pool'] ? undefined : 'spec.pool: Required value'),
    });
    expect(
      await code(s.request({ method: 'POST', path: resourcePath(NODECONFIGS), body: nc('n', {}) })),
    ).toBe('422 Invalid');
  });
});
