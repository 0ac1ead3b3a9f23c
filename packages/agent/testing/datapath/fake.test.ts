import { describe, expect, it } from 'vitest';
import { FakeDatapath } from './fake.js';
import { hostVethName } from '../../src/datapath/naming.js';
import { DatapathError, type DatapathStep, type PodSpec } from '../../src/datapath/types.js';

function newPod(fake: FakeDatapath, id = 'c1', over: Partial<PodSpec> = {}): PodSpec {
  return {
    containerID: id,
    ifName: 'eth0',
    netns: fake.createNetns(),
    hostVeth: hostVethName(id, 'eth0'),
    ip6: '2001:db8:100::5',
    ip4: '192.0.2.5',
    anycast: ['2001:db8:aaaa::1'],
    ...over,
  };
}

/** A flock route (proto 241) for the pod's IPv4 address through a device that is not flock's. */
function addLeftoverRoute(fake: FakeDatapath): void {
  fake.tamperHost([
    {
      op: 'route-replace',
      step: 'host-routes',
      route: { dst: '192.0.2.5/32', type: 'unicast', proto: 241, nexthops: [{ dev: 'lo' }] },
    },
  ]);
}

async function stepOf(p: Promise<unknown>): Promise<DatapathStep | 'ok'> {
  try {
    await p;
    return 'ok';
  } catch (e) {
    if (!(e instanceof DatapathError)) throw e;
    return e.step;
  }
}

describe('FakeDatapath', () => {
  it('wires a pod with two batches and leaves it alone when asked again', async () => {
    const fake = new FakeDatapath();
    const pod = newPod(fake);
    const first = await fake.setupPod(pod);
    expect(first.created).toBe(true);
    expect(fake.writes).toBe(7 + 11);
    const inPod = fake.podState(pod.netns);
    expect(inPod.links.find((l) => l.name === 'eth0')?.addresses.map((a) => a.cidr)).toEqual([
      '2001:db8:100::5/128',
      '192.0.2.5/32',
    ]);
    expect(inPod.links.find((l) => l.name === 'lo')?.addresses.map((a) => a.cidr)).toContain(
      '2001:db8:aaaa::1/128',
    );
    const again = await fake.setupPod(pod);
    expect(again).toEqual({ ...first, created: false });
    expect(fake.writes).toBe(18);
    expect(await fake.checkPod(pod)).toEqual([]);
    expect(fake.hostVethNames()).toEqual([pod.hostVeth]);
    expect(fake.createNetns(pod.netns)).toBe(pod.netns); // kept, not replaced
    expect(await fake.checkPod(pod)).toEqual([]);
    fake.deleteHostRoute('192.0.2.5/32');
    expect((await fake.checkPod(pod)).map((f) => f.kind)).toEqual(['host-route-missing']);
  });

  const steps: DatapathStep[] = [
    'create-veth',
    'host-link',
    'host-addresses',
    'host-routes',
    'pod-link',
    'pod-addresses',
    'pod-neighbours',
    'pod-routes',
    'pod-anycast',
  ];
  it.each(steps)(
    'names step %s when it fails, releases what it took, and can retry',
    async (step) => {
      const fake = new FakeDatapath();
      const pod = newPod(fake);
      fake.failAt(step, 'boom');
      const err = await fake.setupPod(pod).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(DatapathError);
      expect((err as DatapathError).step).toBe(step);
      expect((err as Error).message).toContain('boom');
      expect(await fake.listPodVeths()).toEqual([]);
      expect(await fake.listFlockRoutes()).toEqual([]);
      const lo = fake.podState(pod.netns).links.find((l) => l.name === 'lo');
      expect(lo?.addresses.map((a) => a.cidr) ?? []).not.toContain('2001:db8:aaaa::1/128');
      expect((await fake.setupPod(pod)).created).toBe(true);
      expect(await fake.checkPod(pod)).toEqual([]);
    },
  );

  it('refuses to touch a veth whose name collides with another pod', async () => {
    const fake = new FakeDatapath();
    const a = newPod(fake, 'pod-a');
    await fake.setupPod(a);
    const b = newPod(fake, 'pod-b', {
      hostVeth: a.hostVeth,
      ip6: '2001:db8:100::6',
      ip4: '192.0.2.6',
    });
    const err = await fake.setupPod(b).catch((e: unknown) => e);
    expect((err as DatapathError).step).toBe('create-veth');
    expect((err as Error).message).toMatch(/not the peer/);
    expect(await fake.teardownPod(b)).toEqual({
      deletedVeth: false,
      notOwned: true,
      removedRoutes: [],
    });
    expect(await fake.checkPod(a)).toEqual([]);
  });

  it('refuses an interface name already taken inside the pod', async () => {
    const fake = new FakeDatapath();
    const pod = newPod(fake);
    const other = fake.createNetns();
    fake.tamperPod(pod.netns, [
      {
        op: 'veth-add',
        step: 'create-veth',
        name: 'eth0',
        mac: '02:00:00:00:00:09',
        peer: { name: 'x', mac: '02:00:00:00:00:0a', netns: other },
      },
    ]);
    const err = await fake.setupPod(pod).catch((e: unknown) => e);
    expect((err as DatapathError).step).toBe('create-veth');
    expect((err as Error).message).toMatch(/already exists/);
    expect(await fake.listPodVeths()).toEqual([]);
  });

  it('repairs a wrong IPv4 address without losing the IPv4 routes', async () => {
    const fake = new FakeDatapath();
    const pod = newPod(fake);
    await fake.setupPod(pod);
    fake.tamperPod(pod.netns, [
      { op: 'addr-replace', step: 'pod-addresses', dev: 'eth0', cidr: '192.0.2.77/32' },
      { op: 'addr-del', step: 'pod-addresses', dev: 'eth0', cidr: '192.0.2.5/32' },
    ]);
    const reads = fake.memory.reads;
    await fake.setupPod(pod);
    expect(await fake.checkPod(pod)).toEqual([]);
    // One pass fixes it, a second read pass confirms: 4 reads, no third pass.
    expect(fake.memory.reads - reads).toBe(4 + 2);
  });

  it('tears down idempotently: missing veth, missing netns, repeated calls, leftovers', async () => {
    const fake = new FakeDatapath();
    const pod = newPod(fake);
    await fake.setupPod(pod);
    // A flock route for the pod's address through a non-flock device is a leftover; one
    // through another flock veth belongs to whoever holds that address now.
    addLeftoverRoute(fake);
    const res = await fake.teardownPod(pod);
    expect(res).toEqual({ deletedVeth: true, notOwned: false, removedRoutes: ['192.0.2.5/32'] });
    expect(await fake.listFlockRoutes()).toEqual([]);
    // The pod's lo gave its anycast address back.
    expect(
      fake
        .podState(pod.netns)
        .links.find((l) => l.name === 'lo')
        ?.addresses.map((a) => a.cidr),
    ).not.toContain('2001:db8:aaaa::1/128');
    expect(await fake.teardownPod(pod)).toEqual({
      deletedVeth: false,
      notOwned: false,
      removedRoutes: [],
    });
    fake.deleteNetns(pod.netns);
    expect(await fake.teardownPod(pod)).toEqual({
      deletedVeth: false,
      notOwned: false,
      removedRoutes: [],
    });
  });

  it('tears down an exclusive veth in one batch, without reading it first', async () => {
    const fake = new FakeDatapath();
    const pod = newPod(fake);
    await fake.setupPod(pod);
    addLeftoverRoute(fake);
    const reads = fake.memory.reads;
    const exclusive = { ...pod, exclusive: true };
    expect(await fake.teardownPod(exclusive)).toEqual({
      deletedVeth: true,
      notOwned: false,
      removedRoutes: ['192.0.2.5/32'],
    });
    expect(fake.memory.reads).toBe(reads);
    expect(fake.hostVethNames()).toEqual([]);
    expect(await fake.listFlockRoutes()).toEqual([]);
    // Gone already: one read to tell a missing veth from a failed delete.
    const before = fake.memory.reads;
    expect(await fake.teardownPod(exclusive)).toEqual({
      deletedVeth: false,
      notOwned: false,
      removedRoutes: [],
    });
    expect(fake.memory.reads).toBe(before + 1);
  });

  it('loses the veth and its routes with the namespace', async () => {
    const fake = new FakeDatapath();
    const pod = newPod(fake);
    await fake.setupPod(pod);
    fake.deleteNetns(pod.netns);
    expect(await fake.listPodVeths()).toEqual([]);
    expect((await fake.checkPod(pod)).map((f) => f.kind)).toEqual([
      'host-veth-missing',
      'pod-netns-missing',
    ]);
    expect(await stepOf(fake.setupPod(pod))).toBe('create-veth');
  });

  it('changes nothing on a quiet anycast or blackhole pass', async () => {
    const fake = new FakeDatapath();
    const pod = newPod(fake);
    await fake.setupPod(pod);
    await fake.ensureBlackholes(['2001:db8:100::/64']);
    await fake.ensureAnycastRoute('2001:db8:aaaa::1', [pod.hostVeth]);
    const writes = fake.writes;
    expect(await fake.ensureBlackholes(['2001:db8:100::/64'])).toEqual({ added: [], removed: [] });
    expect((await fake.ensureAnycastRoute('2001:db8:aaaa::1', [pod.hostVeth])).changed).toBe(false);
    expect(fake.writes).toBe(writes);
    expect(await stepOf(fake.ensureBlackholes(['2001:db8:100::1/64']))).toBe('validate');
    expect(await stepOf(fake.ensureAnycastRoute('2001:db8:aaaa::1', ['eth0']))).toBe('validate');
    fake.failAt('anycast-route');
    expect(await stepOf(fake.ensureAnycastRoute('2001:db8:aaaa::1', []))).toBe('anycast-route');
  });

  it("never puts an anycast route over another pod's address or another protocol's route", async () => {
    const fake = new FakeDatapath();
    const victim = newPod(fake, 'victim', { anycast: [] });
    await fake.setupPod(victim);
    const other = newPod(fake, 'c2', { ip6: '2001:db8:100::6', ip4: '192.0.2.6' });
    await fake.setupPod(other);
    const routesBefore = fake.hostState().routes;
    // Another pod's address asked for as anycast: the pod route (protocol 241) stays.
    expect(await stepOf(fake.ensureAnycastRoute(victim.ip6, [other.hostVeth]))).toBe(
      'anycast-route',
    );
    // An address someone else routes (a static route, protocol 4): left alone too.
    fake.tamperHost([
      {
        op: 'route-replace',
        step: 'host-routes',
        route: {
          dst: '2001:db8:aaaa::9/128',
          type: 'unicast',
          proto: 4,
          nexthops: [{ dev: 'lo' }],
        },
      },
    ]);
    await expect(fake.ensureAnycastRoute('2001:db8:aaaa::9', [other.hostVeth])).rejects.toThrow(
      /routed by protocol 4/,
    );
    expect(fake.hostState().routes.filter((r) => r.dst === '2001:db8:aaaa::9/128')).toMatchObject([
      { proto: 4 },
    ]);
    expect(fake.hostState().routes.filter((r) => r.dst === `${victim.ip6}/128`)).toEqual(
      routesBefore.filter((r) => r.dst === `${victim.ip6}/128`),
    );
  });

  it('sets the host sysctls in its own model', async () => {
    const fake = new FakeDatapath();
    const res = await fake.applyHostSysctls();
    expect(res.every((r) => r.ok)).toBe(true);
    expect(fake.memory.sysctls['net.ipv6.fib_multipath_hash_policy']).toBe('1');
  });
});
