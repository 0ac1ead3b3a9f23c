// The claim GC on a real API server (with the real CRD and its rules): a pinned claim goes with
// its pod, an anycast claim loses the holders whose Node is deleted and goes with the last of
// them, a live claim stays; every write passes the CRD's validation.
import { claimObject, validAnycastClaimSpec, validPinnedClaimSpec } from '@flock/api/testing';
import { ADDRESSCLAIMS, objectPath, PODS, resourcePath, type KubeTransport } from '@flock/kube';
import { createMemoryLogger } from '@flock/kube/testing';
import { eventually } from '@flock/testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startOperator, type Operator } from './operator.js';
import {
  createNode,
  deleteNode,
  getClaim,
  NAMESPACE,
  startCluster,
  type Cluster,
} from '../testing/cluster.js';

let c: Cluster;
let op: Operator;
const LONG = { timeoutMs: 30_000 };

beforeAll(async () => {
  c = await startCluster();
  // No controller-manager here: the namespace's default ServiceAccount is made by hand.
  await c.api.request({
    method: 'POST',
    path: resourcePath(
      { ...PODS, plural: 'serviceaccounts', kind: 'ServiceAccount' },
      {
        namespace: 'default',
      },
    ),
    body: { metadata: { name: 'default' } },
  });
  op = await startOperator({
    transport: c.api,
    logger: createMemoryLogger(),
    identity: 'op-claims',
    namespace: NAMESPACE,
    claimGcPeriodMs: 500,
    claimGraceMs: 1_000,
  });
});
afterAll(async () => {
  await op?.stop();
  await c?.cp.stop();
});

async function createPod(api: KubeTransport, name: string): Promise<string> {
  const pod = (await api.request({
    method: 'POST',
    path: resourcePath(PODS, { namespace: 'default' }),
    body: {
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name },
      spec: { containers: [{ name: 'c', image: 'registry.invalid/none' }] },
    },
  })) as { metadata: { uid: string } };
  return pod.metadata.uid;
}

const createClaim = <S extends { address: string }>(spec: S) =>
  c.api.request({
    method: 'POST',
    path: resourcePath(ADDRESSCLAIMS),
    body: claimObject(spec),
  });

describe('claim GC on a real cluster', () => {
  it('releases a pinned claim when its pod goes, and not before', async () => {
    const uid = await createPod(c.api, 'holder');
    const held = (address: string, pod: string, podUid: string) => ({
      ...validPinnedClaimSpec(),
      address,
      holders: [{ node: 'node-x', pod, uid: podUid }],
    });
    await createClaim(held('2001:db8:200::1', 'holder', uid));
    await createClaim(held('2001:db8:200::2', 'never-was', 'uid-never-was'));
    await createClaim({ ...validPinnedClaimSpec(), address: '2001:db8:200::3', holders: [] });
    await eventually(
      'the claims of absent pods released',
      async () => {
        return (
          !(await getClaim(c.api, '2001:db8:200::2')) && !(await getClaim(c.api, '2001:db8:200::3'))
        );
      },
      LONG,
    );
    expect(await getClaim(c.api, '2001:db8:200::1')).toBeDefined();
    await c.api.request({ method: 'DELETE', path: objectPath(PODS, 'holder', 'default') });
    await eventually(
      'the claim released with its pod',
      async () => !(await getClaim(c.api, '2001:db8:200::1')),
      LONG,
    );
  });

  it('drops the anycast holders whose Node is deleted, then the claim', async () => {
    await createNode(c.api, 'claim-a', {});
    await createNode(c.api, 'claim-b', {});
    const spec = {
      ...validAnycastClaimSpec(),
      holders: [{ node: 'claim-a' }, { node: 'claim-b' }],
    };
    await createClaim(spec);
    await deleteNode(c.api, 'claim-b');
    await eventually(
      'claim-b dropped',
      async () => {
        const claim = await getClaim(c.api, spec.address);
        return claim?.spec.holders.length === 1 ? claim : undefined;
      },
      LONG,
    );
    expect((await getClaim(c.api, spec.address))?.spec.holders).toEqual([{ node: 'claim-a' }]);
    await deleteNode(c.api, 'claim-a');
    await eventually(
      'the claim released',
      async () => !(await getClaim(c.api, spec.address)),
      LONG,
    );
    // The counters move after the API server answered the delete: wait for them too.
    const deleted =
      /flock_operator_claim_gc_deletions_total\{kind="Anycast",reason="nodes-gone"\} 1/;
    const text = await eventually(
      'the deletion counted',
      async () => {
        const t = await op.registry.metrics();
        return deleted.test(t) ? t : undefined;
      },
      LONG,
    );
    expect(text).toMatch(/flock_operator_claim_gc_holders_removed_total 1/);
  });
});
