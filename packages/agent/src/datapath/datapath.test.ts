import { describe, expect, it } from 'vitest';
import { FlockDatapath } from './datapath.js';
import type { Kernel } from './kernel.js';
import { MemoryKernel } from '../../testing/datapath/memory-kernel.js';
import { HOST, podNs } from './model.js';
import { hostVethName } from './naming.js';
import { DatapathError, type PodSpec } from './types.js';

function setup() {
  const memory = new MemoryKernel();
  memory.addNetns('/run/netns/p1');
  const pod: PodSpec = {
    containerID: 'c1',
    ifName: 'eth0',
    netns: '/run/netns/p1',
    hostVeth: hostVethName('c1', 'eth0'),
    ip6: '2001:db8:100::5',
  };
  return { memory, pod };
}

describe('FlockDatapath', () => {
  it('gives up after three passes when the kernel does not take the changes', async () => {
    const { memory, pod } = setup();
    await new FlockDatapath(memory).setupPod(pod);
    memory.tamper(HOST, [{ op: 'link-set', step: 'host-link', name: pod.hostVeth, up: false }]);
    // A kernel that accepts every change and keeps none of them.
    const deaf: Kernel = {
      read: (ns, q) => memory.read(ns, q),
      apply: (ns, a) => (a[0]?.op === 'veth-add' ? memory.apply(ns, a) : Promise.resolve()),
      applyAll: () => Promise.resolve([]),
      netnsExists: (ns) => memory.netnsExists(ns),
      writeHostSysctls: (v) => memory.writeHostSysctls(v),
    };
    const before = memory.reads;
    const err = await new FlockDatapath(deaf).setupPod(pod).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(DatapathError);
    expect((err as DatapathError).step).toBe('host-link');
    expect((err as Error).message).toMatch(/still differs after 3 passes: host veth .* is down/);
    expect(memory.reads - before).toBe(2 * 4);
  });

  it("sets the new host veth's sysctls; a node that refuses them still wires pods and says so once", async () => {
    const { memory, pod } = setup();
    await new FlockDatapath(memory).setupPod(pod);
    for (const key of [
      'ipv6.conf.X.accept_ra',
      'ipv6.conf.X.accept_redirects',
      'ipv4.conf.X.accept_redirects',
    ])
      expect(memory.sysctls[`net.${key.replace('X', pod.hostVeth)}`], key).toBe('0');
    // A read-only /proc/sys: every write fails.
    const readOnly: Kernel = Object.assign(Object.create(memory) as MemoryKernel, {
      writeHostSysctls: async (v: Record<string, string>) =>
        Object.keys(v).map((key) => ({
          key,
          value: v[key] ?? '',
          ok: false,
          changed: false,
          error: 'EROFS',
        })),
    });
    const warnings: string[] = [];
    const dp = new FlockDatapath(readOnly, { warn: (m) => warnings.push(m) });
    for (const id of ['c2', 'c3']) {
      memory.addNetns(`/run/netns/${id}`);
      const res = await dp.setupPod({
        ...pod,
        containerID: id,
        netns: `/run/netns/${id}`,
        hostVeth: hostVethName(id, 'eth0'),
      });
      expect(res.ips.length).toBe(1);
    }
    expect(warnings).toEqual(['datapath: could not set a pod veth sysctl (logged once)']);
  });

  it('logs a failed cleanup and reports the original failure', async () => {
    const { memory, pod } = setup();
    const warnings: string[] = [];
    const dp = new FlockDatapath(memory, { warn: (m) => warnings.push(m) });
    memory.failAt('pod-routes', 'no route for you');
    memory.failAt('delete-veth', 'busy');
    const err = await dp.setupPod(pod).catch((e: unknown) => e);
    expect((err as DatapathError).step).toBe('pod-routes');
    expect(warnings).toEqual(['datapath: cleanup after a failed setup failed']);
    // The veth it could not remove is still there, and a DEL removes it.
    expect((await dp.listPodVeths()).map((v) => v.name)).toEqual([pod.hostVeth]);
    expect((await dp.teardownPod(pod)).deletedVeth).toBe(true);
  });

  it('reports an unreadable pod namespace as read-pod', async () => {
    const { memory, pod } = setup();
    const dp = new FlockDatapath(memory);
    await dp.setupPod(pod);
    const broken: Kernel = {
      read: (ns, q) =>
        ns.kind === 'pod'
          ? Promise.reject(new Error('nsenter: permission denied'))
          : memory.read(ns, q),
      apply: (ns, a) => memory.apply(ns, a),
      applyAll: (ns, a) => memory.applyAll(ns, a),
      netnsExists: (ns) => memory.netnsExists(ns),
      writeHostSysctls: (v) => memory.writeHostSysctls(v),
    };
    const err = await new FlockDatapath(broken).checkPod(pod).catch((e: unknown) => e);
    expect((err as DatapathError).step).toBe('read-pod');
    expect(await memory.netnsExists(podNs(pod.netns))).toBe(true);
  });
});
