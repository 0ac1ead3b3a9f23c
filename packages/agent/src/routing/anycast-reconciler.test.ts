import { createMemoryLogger } from '@flock/kube/testing';
import { beforeEach, describe, expect, it } from 'vitest';
import { hostVethName } from '../datapath/index.js';
import { FakeDatapath } from '../../testing/datapath/fake.js';
import { AnycastReconciler } from './anycast-reconciler.js';

const ANY6 = '2001:db8:300::1';
const ANY4 = '203.0.113.5';
let datapath: FakeDatapath;
let desired: Map<string, string[]> | undefined;
const veth = (name: string) => hostVethName(`c-${name}`, 'eth0');

async function podOnNode(name: string, ip6: string, ip4: string) {
  await datapath.setupPod({
    containerID: `c-${name}`,
    ifName: 'eth0',
    netns: datapath.createNetns(),
    hostVeth: veth(name),
    ip6,
    ip4,
    anycast: [ANY6, ANY4],
  });
}

const reconciler = (clock?: { now: () => number; verifyMs?: number }) =>
  new AnycastReconciler({
    datapath,
    desired: () => desired,
    logger: createMemoryLogger(),
    ...clock,
  });

beforeEach(async () => {
  datapath = new FakeDatapath();
  await podOnNode('a', '2001:db8:100::1', '192.0.2.17');
  await podOnNode('b', '2001:db8:100::2', '192.0.2.18');
  desired = new Map();
});

describe('anycast reconciler', () => {
  it('one nexthop per Ready pod (sorted multipath), one with one pod, none without', async () => {
    const both = [veth('b'), veth('a')];
    desired = new Map([
      [ANY6, both],
      [ANY4, both],
    ]);
    const r = reconciler();
    expect((await r.reconcile()).changed).toEqual([ANY6, ANY4].sort());
    expect(await datapath.listAnycastRoutes()).toEqual([
      { ip: ANY6, hostVeths: [veth('a'), veth('b')].sort() },
      { ip: ANY4, hostVeths: [veth('a'), veth('b')].sort() },
    ]);
    const six = datapath.hostState().routes.find((x) => x.dst === `${ANY6}/128`);
    expect(six?.nexthops.map((n) => n.gateway).sort()).toEqual([
      '2001:db8:100::1',
      '2001:db8:100::2',
    ]);

    desired = new Map([[ANY6, [veth('a')]]]);
    expect((await r.reconcile()).changed).toEqual([ANY4, ANY6].sort());
    expect(await datapath.listAnycastRoutes()).toEqual([{ ip: ANY6, hostVeths: [veth('a')] }]);

    desired = new Map();
    await r.reconcile();
    expect(await datapath.listAnycastRoutes()).toEqual([]);
  });

  it('a quiet pass writes nothing', async () => {
    desired = new Map([[ANY6, [veth('a'), veth('b')]]]);
    const r = reconciler();
    await r.reconcile();
    const writes = datapath.writes;
    expect(await r.reconcile()).toEqual({ changed: [], failed: [] });
    expect(await r.reconcile()).toEqual({ changed: [], failed: [] });
    expect(datapath.writes).toBe(writes);
  });

  it('does nothing while the desired state is unknown (pod cache not synced)', async () => {
    desired = new Map([[ANY6, [veth('a')]]]);
    await reconciler().reconcile();
    desired = undefined;
    const writes = datapath.writes;
    await reconciler().reconcile();
    expect(datapath.writes).toBe(writes);
    expect(await datapath.listAnycastRoutes()).toHaveLength(1);
  });

  it('removes anycast routes nothing wants, and repairs a route changed behind its back', async () => {
    desired = new Map([[ANY6, [veth('a')]]]);
    const r = reconciler();
    await r.reconcile();
    await datapath.ensureAnycastRoute('2001:db8:300::99', [veth('b')]); // a stray one
    await datapath.ensureAnycastRoute(ANY6, [veth('b')]); // drift
    expect((await r.reconcile()).changed).toEqual([ANY6, '2001:db8:300::99']);
    expect(await datapath.listAnycastRoutes()).toEqual([{ ip: ANY6, hostVeths: [veth('a')] }]);
  });

  it('without anycast pods it reads the kernel once per verification period; a stray route goes at the next', async () => {
    let now = 0;
    const r = reconciler({ now: () => now, verifyMs: 30_000 });
    await r.reconcile();
    expect(r.reads).toBe(1);
    await datapath.ensureAnycastRoute('2001:db8:300::99', [veth('b')]); // a stray one
    now = 29_999;
    expect(await r.reconcile()).toEqual({ changed: [], failed: [] });
    expect(r.reads).toBe(1);
    now = 30_000;
    expect((await r.reconcile()).changed).toEqual(['2001:db8:300::99']);
    expect(r.reads).toBe(2);
    expect(await datapath.listAnycastRoutes()).toEqual([]);
    // A pod with an anycast address appears: read (and written) at once, whatever the clock.
    desired = new Map([[ANY6, [veth('a')]]]);
    expect((await r.reconcile()).changed).toEqual([ANY6]);
    expect(r.reads).toBe(3);
  });

  it('with anycast pods every pass reads the kernel (a veth made again loses its routes)', async () => {
    desired = new Map([[ANY6, [veth('a')]]]);
    const r = reconciler({ now: () => 0 });
    await r.reconcile();
    await datapath.ensureAnycastRoute(ANY6, []); // gone behind its back
    expect((await r.reconcile()).changed).toEqual([ANY6]);
    expect(r.reads).toBe(2);
  });

  it('a pass that could not write reads again next time', async () => {
    let now = 0;
    const r = reconciler({ now: () => now });
    await datapath.ensureAnycastRoute('2001:db8:300::99', [veth('b')]);
    datapath.failAt('anycast-route', 'RTNETLINK answers: No buffer space available');
    expect((await r.reconcile()).failed).toEqual(['2001:db8:300::99']);
    now = 1;
    expect((await r.reconcile()).changed).toEqual(['2001:db8:300::99']);
    expect(r.reads).toBe(2);
  });

  it('reports an address it could not write and goes on with the others', async () => {
    desired = new Map([
      [ANY6, [veth('a')]],
      [ANY4, [veth('a')]],
    ]);
    datapath.failAt('anycast-route', 'RTNETLINK answers: No buffer space available');
    const r = await reconciler().reconcile();
    expect(r.failed).toHaveLength(1);
    expect(r.changed).toHaveLength(1);
    expect((await reconciler().reconcile()).changed).toEqual(r.failed);
  });
});
