import { NAMESPACES, NODES } from '@flock/kube';
import { FakeApiServer } from '@flock/kube/testing';
import { describe, expect, it } from 'vitest';
import { fetchNamespace, fetchNodeReady } from './api-reads.js';

describe('what the claim protocol reads beside the claims', () => {
  it("a namespace's labels, by a list (no get permission needed); none for one that is not there", async () => {
    const api = new FakeApiServer();
    api.putObject(NAMESPACES, {
      apiVersion: 'v1',
      kind: 'Namespace',
      metadata: { name: 'team', labels: { tenant: 'a' } },
    });
    api.putObject(NAMESPACES, {
      apiVersion: 'v1',
      kind: 'Namespace',
      metadata: { name: 'other', labels: { tenant: 'b' } },
    });
    expect(await fetchNamespace(api, 'team')).toEqual({ name: 'team', labels: { tenant: 'a' } });
    expect(await fetchNamespace(api, 'gone')).toEqual({ name: 'gone', labels: {} });
    expect(api.requests.every((r) => r.method === 'GET' && r.path === '/api/v1/namespaces')).toBe(
      true,
    );
  });

  it('whether a node is Ready: true, false (Unknown counts as not), undefined when it is gone', async () => {
    const api = new FakeApiServer();
    const node = (name: string, status: string) =>
      api.putObject(NODES, {
        apiVersion: 'v1',
        kind: 'Node',
        metadata: { name },
        status: { conditions: [{ type: 'Ready', status }] },
      });
    node('up', 'True');
    node('dead', 'Unknown');
    expect(await fetchNodeReady(api, 'up')).toBe(true);
    expect(await fetchNodeReady(api, 'dead')).toBe(false);
    expect(await fetchNodeReady(api, 'gone')).toBeUndefined();
  });
});
