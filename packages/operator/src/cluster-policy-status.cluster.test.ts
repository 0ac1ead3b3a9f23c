// The ClusterNetworkPolicy status writer on a real API server with sig-network's CRD as the
// chart ships it (v0.3.0, experimental channel): a standby writes nothing; the leader writes
// flock.fritzlab.net/Enforceable through the status subresource on each policy, with the
// policy's generation, and follows a change of the spec. The twin of
// cluster-policy-status.test.ts (FakeApiServer).
import { OPERATOR_FIELD_MANAGER } from '@flock/api';
import { CLUSTER_NETWORK_POLICIES, objectPath } from '@flock/kube';
import { createMemoryLogger, type MemoryLogger } from '@flock/kube/testing';
import { eventually, installCnpCrd, kubectl } from '@flock/testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ClusterPolicyStatus, ENFORCEABLE_CONDITION } from './cluster-policy-status.js';
import { startCluster, type Cluster } from '../testing/cluster.js';

interface Condition {
  type: string;
  status: string;
  reason: string;
  message: string;
  observedGeneration?: number;
  lastTransitionTime: string;
}
interface Cnp {
  metadata: {
    generation: number;
    resourceVersion: string;
    managedFields?: { manager: string; operation: string; subresource?: string }[];
  };
  status?: { conditions?: Condition[] };
}

let c: Cluster;
let log: MemoryLogger;
let writer: ClusterPolicyStatus;

const cnp = (name: string, egress: unknown[]) => ({
  apiVersion: 'policy.networking.k8s.io/v1alpha2',
  kind: 'ClusterNetworkPolicy',
  metadata: { name },
  spec: { tier: 'Baseline', priority: 5, subject: { namespaces: {} }, egress },
});
const deny = cnp('flock-test-deny', [
  { name: 'no-docs', action: 'Deny', to: [{ networks: ['192.0.2.0/24'] }] },
]);
const dns = cnp('flock-test-dns', [
  { name: 'docs', action: 'Accept', to: [{ domainNames: ['docs.example.com'] }] },
]);

/** `kubectl apply`, as a user writes a policy. */
const apply = (obj: object) =>
  kubectl(c.cp.kubeconfigPath, ['apply', '-f', '-'], { input: JSON.stringify(obj) });
const get = async (name: string) =>
  (await c.api.request({ method: 'GET', path: objectPath(CLUSTER_NETWORK_POLICIES, name) })) as Cnp;
const enforceable = (p: Cnp) => p.status?.conditions?.find((x) => x.type === ENFORCEABLE_CONDITION);

beforeAll(async () => {
  c = await startCluster(['etcd', 'apiserver']);
  log = createMemoryLogger();
  writer = new ClusterPolicyStatus({
    transport: c.api,
    logger: log,
    fieldManager: OPERATOR_FIELD_MANAGER,
    recheckMs: 200,
  });
  writer.start(); // before the CRD exists: it waits for it
});
afterAll(async () => {
  await writer?.stop();
  await c?.cp.stop();
});

describe('ClusterNetworkPolicy status on a real API server', () => {
  it('waits for the CRD; a standby writes nothing', async () => {
    await eventually('"not installed" logged', () =>
      log.find('info', 'CRD is not installed').length ? true : undefined,
    );
    await installCnpCrd(c.cp);
    await apply(deny);
    await apply(dns);
    await new Promise((r) => setTimeout(r, 1_000)); // the probe has found the CRD meanwhile
    expect(enforceable(await get('flock-test-deny'))).toBeUndefined();
    expect(enforceable(await get('flock-test-dns'))).toBeUndefined();
  });

  it('the leader writes Enforceable through the status subresource, with the generation', async () => {
    await writer.setLeading(true);
    const good = await eventually('the condition on flock-test-deny', async () => {
      const p = await get('flock-test-deny');
      return enforceable(p) ? p : undefined;
    });
    expect(enforceable(good)).toMatchObject({
      status: 'True',
      reason: 'Enforceable',
      message: 'flock enforces every rule as written',
      observedGeneration: good.metadata.generation,
      lastTransitionTime: expect.stringMatching(/^\d{4}-\d\d-\d\dT/),
    });
    // A status write: the spec's generation stays, and the server records it as /status.
    expect(good.metadata.generation).toBe(1);
    expect(good.metadata.managedFields).toContainEqual(
      expect.objectContaining({ manager: OPERATOR_FIELD_MANAGER, subresource: 'status' }),
    );

    const bad = await eventually('the condition on flock-test-dns', async () => {
      const p = await get('flock-test-dns');
      return enforceable(p) ? p : undefined;
    });
    expect(enforceable(bad)).toMatchObject({
      status: 'False',
      reason: 'DomainNamesNotEnforced',
      message:
        'spec.egress[0]: domainNames peers match nothing (flock does not see DNS); the rest is enforced',
      observedGeneration: 1,
    });

    // Its own write comes back through the watch: no second write.
    const version = (await get('flock-test-deny')).metadata.resourceVersion;
    await new Promise((r) => setTimeout(r, 1_000));
    expect((await get('flock-test-deny')).metadata.resourceVersion).toBe(version);
  });

  it('a new spec: the condition follows, with the new generation', async () => {
    const before = enforceable(await get('flock-test-dns'));
    await apply(
      cnp('flock-test-dns', [
        { name: 'docs', action: 'Accept', to: [{ networks: ['198.51.100.0/24'] }] },
      ]),
    );
    const after = await eventually('the condition of generation 2', async () => {
      const p = await get('flock-test-dns');
      const cond = enforceable(p);
      return p.metadata.generation === 2 && cond?.observedGeneration === 2 ? cond : undefined;
    });
    expect(after).toMatchObject({ status: 'True', reason: 'Enforceable' });
    expect(Date.parse(after.lastTransitionTime)).toBeGreaterThanOrEqual(
      Date.parse(before!.lastTransitionTime),
    );
    // The other way round: enforceable → not.
    await apply(
      cnp('flock-test-deny', [
        { name: 'no-docs', action: 'Deny', to: [{ domainNames: ['*.example.com'] }] },
      ]),
    );
    const denied = await eventually('flock-test-deny of generation 2', async () => {
      const cond = enforceable(await get('flock-test-deny'));
      return cond?.observedGeneration === 2 ? cond : undefined;
    });
    expect(denied).toMatchObject({ status: 'False', reason: 'DomainNamesNotEnforced' });
  });
});
