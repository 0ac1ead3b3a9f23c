import { describe, expect, it } from 'vitest';
import { KubeApiError } from '../core/errors.js';
import { FakeApiServer } from '../../testing/fake-apiserver.js';
import { CLUSTER_NETWORK_POLICIES, LEASES, PODS } from '../core/resource.js';
import { groupVersionPath, resourceServed } from './served.js';

describe('resourceServed', () => {
  it('asks discovery, not the resource: served groups list their resources', async () => {
    const api = new FakeApiServer();
    expect(await resourceServed(api, PODS)).toBe(true);
    expect(await resourceServed(api, LEASES)).toBe(true);
    expect(api.requests.map((r) => `${r.method} ${r.path}`)).toEqual([
      'GET /api/v1',
      'GET /apis/coordination.k8s.io/v1',
    ]);
  });

  it('an optional CRD: false until it is served, then true', async () => {
    const api = new FakeApiServer();
    expect(await resourceServed(api, CLUSTER_NETWORK_POLICIES)).toBe(false); // group: 404
    api.register(CLUSTER_NETWORK_POLICIES, { statusSubresource: true });
    expect(await resourceServed(api, CLUSTER_NETWORK_POLICIES)).toBe(true);
  });

  it('a served group/version that does not list the resource: false', async () => {
    const api = new FakeApiServer();
    expect(await resourceServed(api, { ...PODS, plural: 'widgets', kind: 'Widget' })).toBe(false);
  });

  it('any other failure rejects: "do not know" is not "not installed"', async () => {
    const api = new FakeApiServer();
    api.inject(() => new KubeApiError(503, 'ServiceUnavailable', 'etcd is down'));
    await expect(resourceServed(api, CLUSTER_NETWORK_POLICIES)).rejects.toThrow(/etcd is down/);
  });

  it('discovery paths of the core and named groups', () => {
    expect(groupVersionPath(PODS)).toBe('/api/v1');
    expect(groupVersionPath(CLUSTER_NETWORK_POLICIES)).toBe(
      '/apis/policy.networking.k8s.io/v1alpha2',
    );
  });
});
