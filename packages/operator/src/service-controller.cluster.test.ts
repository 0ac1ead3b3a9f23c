// The Service address controller on a real API server (the real CRDs and their rules, the real
// Service status subresource, leader election on a real Lease; one operator): a LoadBalancer
// Service gets an address from the Pool's Service range — claim and status —, a Service of
// another class is left alone, a deleted Service lets its address go into the quarantine, and
// the claim GC deletes the quarantine once it is over.
import { LOAD_BALANCER_CLASS, Service } from '@flock/api';
import { objectPath, resourcePath, SERVICES, type KubeTransport } from '@flock/kube';
import { createMemoryLogger } from '@flock/kube/testing';
import { eventually } from '@flock/testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LB_CLEANUP_FINALIZER } from './service-finalizer.js';
import { startOperator, type Operator } from './operator.js';
import {
  applyPool,
  getPool,
  listEvents,
  getClaim,
  NAMESPACE,
  startCluster,
  type Cluster,
} from '../testing/cluster.js';
import { serviceObject, servicePool, ingressOf, type ServiceInput } from '../testing/services.js';

let c: Cluster;
let op: Operator;
const LONG = { timeoutMs: 30_000 };

beforeAll(async () => {
  c = await startCluster();
  await c.kubectl('create', 'namespace', 'shop');
  await applyPool(c, 'a', servicePool('a').spec);
  op = await startOperator({
    transport: c.api,
    logger: createMemoryLogger(),
    identity: 'op-services',
    namespace: NAMESPACE,
    claimGcPeriodMs: 500,
    serviceQuarantineMs: 3_000,
  });
});
afterAll(async () => {
  await op?.stop();
  await c?.cp.stop();
});

/** Create a Service as a user does (the API server fills in families, ports, cluster IPs). */
async function createService(api: KubeTransport, name: string, i: ServiceInput = {}) {
  const { spec, metadata } = serviceObject(name, i);
  // The test control plane's Service CIDR is IPv4 only: the API server picks the family.
  const { ipFamilies: _f, ipFamilyPolicy: _p, ...rest } = spec;
  await api.request({
    method: 'POST',
    path: resourcePath(SERVICES, { namespace: 'shop' }),
    body: { apiVersion: 'v1', kind: 'Service', metadata, spec: rest },
  });
}

async function getService(name: string): Promise<Service | undefined> {
  try {
    return Service.parse(
      await c.api.request({ method: 'GET', path: objectPath(SERVICES, name, 'shop') }),
    );
  } catch {
    return undefined;
  }
}

describe('Service addresses on a real API server', () => {
  it('gives a LoadBalancer Service an address: its claim, then its status', async () => {
    await eventually('the operator leads', () => op.isLeader(), LONG);
    await createService(c.api, 'web', { ports: [{ port: 443 }] });
    const svc = await eventually(
      'an address in status',
      async () => {
        const s = await getService('web');
        return ingressOf(s).length ? s : undefined;
      },
      LONG,
    );
    expect(svc.spec?.ipFamilies).toEqual(['IPv4']);
    expect(svc.metadata.finalizers).toEqual([LB_CLEANUP_FINALIZER]);
    expect(svc.status?.loadBalancer?.ingress).toEqual([{ ip: '203.0.113.65', ipMode: 'VIP' }]);
    expect((await getClaim(c.api, '203.0.113.65'))?.spec).toMatchObject({
      kind: 'Service',
      namespace: 'shop',
      key: 'Service/web',
      services: ['web'],
      holders: [],
    });
    const assigned = await eventually(
      'an Event',
      async () =>
        (await listEvents(c.api)).find(
          (e) => e.regarding.name === 'web' && e.reason === 'AddressAssigned',
        ),
      LONG,
    );
    expect(assigned.note).toBe('assigned 203.0.113.65');
    await eventually(
      'pool counts',
      async () => (await getPool(c.api, 'a'))?.status?.services?.ipv4?.assigned === 1,
      LONG,
    );
  });

  it('leaves a Service of another class alone', async () => {
    await createService(c.api, 'theirs', { loadBalancerClass: 'example.com/lb' });
    await createService(c.api, 'ours', { loadBalancerClass: LOAD_BALANCER_CLASS });
    await eventually('ours', async () => ingressOf(await getService('ours')).length === 1, LONG);
    expect(ingressOf(await getService('ours'))).toEqual(['203.0.113.66']);
    expect((await getService('theirs'))?.status?.loadBalancer?.ingress).toBeUndefined();
    expect((await getService('theirs'))?.metadata.finalizers).toBeUndefined();
  });

  it('lets a deleted Service address go into the quarantine, and deletes it when that is over', async () => {
    await c.api.request({ method: 'DELETE', path: objectPath(SERVICES, 'web', 'shop') });
    const released = await eventually(
      'released',
      async () => {
        const claim = await getClaim(c.api, '203.0.113.65');
        return claim?.spec.releasedAt ? claim : undefined;
      },
      LONG,
    );
    expect(released.spec.services).toEqual([]);
    // The finalizer held the Service until then; now the API server has let it go.
    await eventually('the Service deleted', async () => !(await getService('web')), LONG);
    await eventually(
      'the quarantine is over',
      async () => !(await getClaim(c.api, '203.0.113.65')),
      LONG,
    );
  });
});
