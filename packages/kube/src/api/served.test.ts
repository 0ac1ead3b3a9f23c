import { eventually } from '@flock/testkit';
import { describe, expect, it } from 'vitest';
import { createMemoryLogger } from '../../testing/memory-logger.js';
import { KubeApiError } from '../core/errors.js';
import { FakeApiServer } from '../../testing/fake-apiserver.js';
import { CLUSTER_NETWORK_POLICIES, LEASES, PODS } from '../core/resource.js';
import { groupVersionPath, resourceServed, whenServed } from './served.js';

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

describe('whenServed', () => {
  it('asks again while the CRD is absent, logs that once, and calls onServed once it is served', async () => {
    const api = new FakeApiServer();
    const logger = createMemoryLogger();
    let absent = 0;
    let served = 0;
    const probe = whenServed({
      transport: api,
      ref: CLUSTER_NETWORK_POLICIES,
      logger,
      absentMessage: 'not installed',
      recheckMs: 5,
      onAbsent: () => absent++,
      onServed: () => served++,
    });
    await eventually('asked three times', () => absent >= 3);
    expect(served).toBe(0);
    expect(logger.find('info', 'not installed')).toHaveLength(1);
    api.register(CLUSTER_NETWORK_POLICIES, { statusSubresource: true });
    await eventually('served', () => served === 1);
    const asked = api.requests.length;
    await new Promise((r) => setTimeout(r, 30));
    expect(api.requests.length).toBe(asked); // no more probing once served
    expect(served).toBe(1);
    probe.stop();
  });

  it('"cannot tell" is retried after retryMs and never counted as absent', async () => {
    const api = new FakeApiServer();
    const logger = createMemoryLogger();
    const heal = api.inject(() => new KubeApiError(503, 'ServiceUnavailable', 'etcd is down'));
    let absent = 0;
    let served = 0;
    api.register(CLUSTER_NETWORK_POLICIES, { statusSubresource: true });
    const probe = whenServed({
      transport: api,
      ref: CLUSTER_NETWORK_POLICIES,
      logger,
      absentMessage: 'not installed',
      recheckMs: 60_000,
      retryMs: 5,
      onAbsent: () => absent++,
      onServed: () => served++,
    });
    await eventually(
      'warned twice',
      () => logger.entries.filter((e) => e.level === 'warn').length >= 2,
    );
    expect(logger.entries[0]?.message).toContain(
      'clusternetworkpolicies.policy.networking.k8s.io/v1alpha2',
    );
    heal();
    await eventually('served', () => served === 1);
    expect(absent).toBe(0);
    probe.stop();
  });

  it('stop() ends the probing', async () => {
    const api = new FakeApiServer();
    let absent = 0;
    const probe = whenServed({
      transport: api,
      ref: CLUSTER_NETWORK_POLICIES,
      logger: createMemoryLogger(),
      absentMessage: 'not installed',
      recheckMs: 5,
      onAbsent: () => absent++,
      onServed: () => undefined,
    });
    await eventually('asked once', () => absent >= 1);
    probe.stop();
    const seen = absent;
    await new Promise((r) => setTimeout(r, 40));
    expect(absent).toBe(seen);
  });
});
