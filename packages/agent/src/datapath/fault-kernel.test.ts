import { describe, expect, it } from 'vitest';
import type { DatapathFaultPoint } from '../core/faults.js';
import { FlockDatapath } from './datapath.js';
import { FaultKernel, datapathFaultPoint } from './fault-kernel.js';
import { MemoryKernel } from '../../testing/datapath/memory-kernel.js';
import { HOST, podNs } from './model.js';
import { hostVethName } from './naming.js';

const NETNS = '/var/run/netns/p1';
const pod = {
  containerID: 'c1',
  ifName: 'eth0',
  netns: NETNS,
  hostVeth: hostVethName('c1', 'eth0'),
  ip6: '2001:db8:100::1',
  ip4: '192.0.2.17',
  anycast: ['2001:db8:300::1'],
};

/** A datapath whose every fault point records what the kernel holds at that moment. */
function recording() {
  const memory = new MemoryKernel();
  memory.addNetns(NETNS);
  const seen: { point: DatapathFaultPoint; veth: boolean; routes: string[]; podAddrs: string[] }[] =
    [];
  const datapath = new FlockDatapath(
    new FaultKernel(memory, (point) => {
      const host = memory.snapshot(HOST);
      const inPod = memory.hasNetns(NETNS) ? memory.snapshot(podNs(NETNS)) : undefined;
      seen.push({
        point,
        veth: host.links.some((l) => l.name === pod.hostVeth),
        routes: host.routes.filter((r) => r.proto === 241).map((r) => r.dst),
        podAddrs: (inPod?.links.find((l) => l.name === 'eth0')?.addresses ?? []).map((a) => a.cidr),
      });
    }),
  );
  return { memory, datapath, seen };
}

describe('FaultKernel (test-only fault points inside the datapath)', () => {
  it('stops after each step of a fresh ADD, with exactly that much applied', async () => {
    const { datapath, seen } = recording();
    const result = await datapath.setupPod(pod);
    expect(result.created).toBe(true);
    expect(seen.map((s) => s.point)).toEqual([
      'after-veth',
      'after-host-link',
      'after-host-addresses',
      'after-host-routes',
      'after-pod-link',
      'after-pod-addresses',
      'after-pod-neighbours',
      'after-pod-routes',
      'after-pod-anycast',
    ]);
    const at = (p: DatapathFaultPoint) => seen.find((s) => s.point === p)!;
    expect(at('after-veth')).toMatchObject({ veth: true, routes: [], podAddrs: [] });
    expect(at('after-host-addresses').routes).toEqual([]);
    expect(at('after-host-routes').routes.sort()).toEqual(['192.0.2.17/32', '2001:db8:100::1/128']);
    expect(at('after-pod-link').podAddrs).toEqual([]);
    expect(at('after-pod-addresses').podAddrs.sort()).toEqual([
      '192.0.2.17/32',
      '2001:db8:100::1/128',
    ]);
  });

  it('a repeated ADD still tells an existing veth by its index (EEXIST on line 0)', async () => {
    const { datapath, seen } = recording();
    await datapath.setupPod(pod);
    seen.length = 0;
    expect((await datapath.setupPod(pod)).created).toBe(false);
    expect(seen).toEqual([]); // nothing differed, nothing was written
  });

  it('stops inside DEL after the veth is gone', async () => {
    const { datapath, seen } = recording();
    await datapath.setupPod(pod);
    seen.length = 0;
    await datapath.teardownPod({ ...pod });
    expect(seen.map((s) => s.point)).toEqual([
      'del-after-veth-deleted',
      'del-after-anycast-removed',
    ]);
    expect(seen[0]).toMatchObject({ veth: false, routes: [] });
  });

  it('maps only the steps it documents', () => {
    expect(datapathFaultPoint({ op: 'link-set', step: 'host-link', name: 'x', up: true })).toBe(
      'after-host-link',
    );
    expect(
      datapathFaultPoint({ op: 'route-replace', step: 'blackholes', route: {} as never }),
    ).toBeUndefined();
  });
});
