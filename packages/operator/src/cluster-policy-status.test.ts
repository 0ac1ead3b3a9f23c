import { CLUSTER_NETWORK_POLICIES, groupVersionPath, type KubeObject } from '@flock/kube';
import { createMemoryLogger, FakeApiServer } from '@flock/kube/testing';
import { eventually } from '@flock/testkit';
import { afterEach, describe, expect, it } from 'vitest';
import { ClusterPolicyStatus, ENFORCEABLE_CONDITION } from './cluster-policy-status.js';

interface WithStatus extends KubeObject {
  status?: { conditions?: { type: string; status: string; reason: string; message: string }[] };
}

const cnp = (name: string, spec: Record<string, unknown>, status?: unknown) => ({
  apiVersion: 'policy.networking.k8s.io/v1alpha2',
  kind: 'ClusterNetworkPolicy',
  metadata: { name },
  spec,
  ...(status ? { status } : {}),
});
const good = cnp('good', {
  tier: 'Admin',
  priority: 1,
  subject: { namespaces: {} },
  ingress: [{ action: 'Deny', from: [{ namespaces: {} }] }],
});
const dns = cnp('dns', {
  tier: 'Baseline',
  priority: 1,
  subject: { namespaces: {} },
  egress: [{ action: 'Accept', to: [{ domainNames: ['example.com'] }] }],
});
const future = cnp(
  'future',
  {
    tier: 'Admin',
    priority: 1,
    subject: { namespaces: {} },
    ingress: [{ action: 'Deny', from: [{ future: {} }] }],
  },
  // Someone else's condition stays.
  {
    conditions: [
      {
        type: 'other.example/Ready',
        status: 'True',
        reason: 'X',
        message: '',
        lastTransitionTime: '2026-01-01T00:00:00Z',
      },
    ],
  },
);

let status: ClusterPolicyStatus | undefined;
afterEach(async () => {
  await status?.stop();
});

const condition = (server: FakeApiServer, name: string) =>
  server
    .getObject<WithStatus>(CLUSTER_NETWORK_POLICIES, name)
    ?.status?.conditions?.find((c) => c.type === ENFORCEABLE_CONDITION);

describe('ClusterPolicyStatus', () => {
  it('writes the Enforceable condition while leading, for each policy, once', async () => {
    const server = new FakeApiServer();
    server.register(CLUSTER_NETWORK_POLICIES, { statusSubresource: true });
    for (const p of [good, dns, future]) server.putObject(CLUSTER_NETWORK_POLICIES, p);
    status = new ClusterPolicyStatus({
      transport: server,
      logger: createMemoryLogger(),
      fieldManager: 'test',
    });
    status.start();
    await new Promise((r) => setTimeout(r, 100));
    expect(condition(server, 'good')).toBeUndefined(); // a standby writes nothing
    await status.setLeading(true);
    await eventually('conditions', () =>
      ['good', 'dns', 'future'].every((n) => condition(server, n)),
    );
    expect(condition(server, 'good')).toMatchObject({ status: 'True', reason: 'Enforceable' });
    expect(condition(server, 'dns')).toMatchObject({
      status: 'False',
      reason: 'DomainNamesNotEnforced',
      message: expect.stringContaining('spec.egress[0]'),
    });
    expect(condition(server, 'future')).toMatchObject({
      status: 'False',
      reason: 'FailClosed',
      message: expect.stringContaining('spec.ingress[0].from[0]'),
    });
    const others = server.getObject<WithStatus>(CLUSTER_NETWORK_POLICIES, 'future')?.status
      ?.conditions;
    expect(others?.map((c) => c.type)).toEqual(['other.example/Ready', ENFORCEABLE_CONDITION]);
    // Its own write comes back as an update: no second write.
    const version = server.getObject(CLUSTER_NETWORK_POLICIES, 'good')?.metadata.resourceVersion;
    await new Promise((r) => setTimeout(r, 200));
    expect(server.getObject(CLUSTER_NETWORK_POLICIES, 'good')?.metadata.resourceVersion).toBe(
      version,
    );
  });

  it('without the CRD it waits, and picks the policies up once the CRD is installed', async () => {
    const server = new FakeApiServer();
    const logger = createMemoryLogger();
    status = new ClusterPolicyStatus({
      transport: server,
      logger,
      fieldManager: 'test',
      recheckMs: 50,
    });
    status.start();
    await status.setLeading(true);
    await eventually(
      'several re-checks',
      () =>
        server.requests.filter((r) => r.path === groupVersionPath(CLUSTER_NETWORK_POLICIES))
          .length >= 3,
    );
    expect(logger.find('info', 'CRD is not installed')).toHaveLength(1);
    server.register(CLUSTER_NETWORK_POLICIES, { statusSubresource: true });
    server.putObject(CLUSTER_NETWORK_POLICIES, good);
    await eventually('the condition', () => condition(server, 'good')?.status === 'True');
  });
});
