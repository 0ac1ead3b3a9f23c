// End-to-end scenario 1 on the whole lab: the real control plane and operator, three real nodes
// (containerd, runc, kubelet, kube-proxy, the agent and BIRD each), and a router namespace.
// Pods on every node get public addresses from their node's prefix, the router learns every
// node's aggregate over BGP and reaches every pod; a deleted pod is unwired and unreachable.
import { readFile } from 'node:fs/promises';
import { dirname } from 'node:path';
import { NodeConfig, cidrContainsIp } from '@flock/api';
import { NODECONFIGS, objectPath } from '@flock/kube';
import { eventually } from '@flock/testkit';
import { describe, expect, it } from 'vitest';
import { isPodReady } from '../core/pod-list.js';
import { SAMPLE_PINNED6, sampleDeployment, samplePinned } from '../core/plan.js';
import { readState } from '../core/state.js';
import { probeFromRouter } from '../probes/status.js';
import { DEPLOYMENTS, listPods, waitForPods } from '../core/workloads.js';
import { startLab } from '../core/test-lab.js';

const { lab, dir } = startLab({
  tmpPrefix: 'flock-lab-it-',
  tools: ['bird', 'nsenter', 'flock-controlplane', 'kubectl'],
  nodes: 3,
  setup: (lab) => lab.apply(DEPLOYMENTS, sampleDeployment(3)),
});

describe('scenario 1: public pod addresses on every node, reachable from the router', () => {
  it('every node has a NodeConfig and the router holds both its prefixes via that node', async () => {
    const routes = await lab.router!.routes();
    for (const plan of lab.plans) {
      const nc = NodeConfig.parse(
        await lab.api!.request({ method: 'GET', path: objectPath(NODECONFIGS, plan.name) }),
      );
      // IPv4 rides the IPv6 session: its next hop is the node's IPv6 uplink address.
      for (const prefix of [nc.spec.cidr6, nc.spec.cidr4])
        expect(routes.find((r) => r.prefix === prefix)?.via).toEqual([plan.node6]);
    }
  });

  it("the control plane runs in a cgroup tree of its own beside the nodes'; the router outside them", async () => {
    const nodesRoot = dirname(lab.nodes[0]!.cgroup.path);
    expect(dirname(lab.cpCgroup.path)).toBe(nodesRoot);
    const confined = await lab.cpCgroup.pids();
    expect(lab.cp!.pids().length).toBeGreaterThanOrEqual(5); // up, etcd, apiserver, cm, scheduler
    for (const pid of lab.cp!.pids()) expect(confined).toContain(pid);
    const cgroupOf = (pid: number) => readFile(`/proc/${pid}/cgroup`, 'utf8');
    expect(await cgroupOf(lab.router!.bird!.child.pid!)).toBe(await cgroupOf(process.pid));
  });

  it('the Deployment runs one pod per node, each with an address of its node and reachable', async () => {
    const pods = await waitForPods(lab, 'default', 'app=web', 3);
    expect(new Set(pods.map((p) => p.spec.nodeName)).size).toBe(3);
    await lab.saveState();
    const state = (await readState(dir))!;
    for (const pod of pods) {
      const nc = NodeConfig.parse(
        await lab.api!.request({
          method: 'GET',
          path: objectPath(NODECONFIGS, pod.spec.nodeName!),
        }),
      );
      const [ip6, ip4] = pod.status!.podIPs!.map((i) => i.ip);
      expect(cidrContainsIp(nc.spec.cidr6, ip6!)).toBe(true);
      expect(cidrContainsIp(nc.spec.cidr4!, ip4!)).toBe(true);
      for (const ip of [ip6!, ip4!]) {
        const r = await probeFromRouter(state, ip);
        expect(r).toEqual({ ok: true, reply: pod.metadata.name });
      }
    }
  });

  it('a deleted pod is unwired: its host routes are gone and its address no longer answers', async () => {
    const original = await waitForPods(lab, 'default', 'app=web', 3);
    const [victim] = original;
    const ip = victim!.status!.podIPs![0]!.ip;
    await lab.api!.request({
      method: 'DELETE',
      path: `/api/v1/namespaces/default/pods/${victim!.metadata.name}`,
    });
    await eventually(
      'the pod object is gone (the kubelet confirmed the deletion)',
      async () =>
        !(await listPods(lab, 'default', 'app=web')).some(
          (p) => p.metadata.name === victim!.metadata.name,
        ),
      { timeoutMs: 60_000 },
    );
    const state = (await readState(dir))!;
    const routes = await lab
      .node(victim!.spec.nodeName!)
      .ns.enter('ip', ['-6', 'route', 'show', ip]);
    expect(routes.stdout.trim()).toBe('');
    expect((await probeFromRouter(state, ip)).ok).toBe(false);
    // The Deployment replaces it with a new, reachable pod.
    // (Compare with the pods before the deletion: the replacement may already be running.)
    const pods = await waitForPods(lab, 'default', 'app=web', 3);
    const before = new Set(original.map((p) => p.metadata.name));
    const fresh = pods.find((p) => !before.has(p.metadata.name));
    expect(fresh).toBeDefined();
    await lab.saveState();
    const r = await probeFromRouter((await readState(dir))!, fresh!.status!.podIPs![0]!.ip);
    expect(r).toEqual({ ok: true, reply: fresh!.metadata.name });
  });

  it('a killed node is tainted by the node-lifecycle controller and its pods are replaced elsewhere', async () => {
    const dead = lab.plans[2]!;
    const victims = (await waitForPods(lab, 'default', 'app=web', 3)).filter(
      (p) => p.spec.nodeName === dead.name,
    );
    expect(victims.length).toBeGreaterThan(0);
    await lab.killNode(dead.name);
    await eventually(
      'the node is tainted unreachable (NoExecute)',
      async () => {
        const node = (await lab.api!.request({
          method: 'GET',
          path: `/api/v1/nodes/${dead.name}`,
        })) as {
          spec?: { taints?: { key: string; effect: string }[] };
        };
        return node.spec?.taints?.some(
          (t) => t.key === 'node.kubernetes.io/unreachable' && t.effect === 'NoExecute',
        );
      },
      { timeoutMs: 60_000, intervalMs: 500 },
    );
    // Evicted (deletion requested); nobody confirms it on a dead node, so it stays Terminating.
    const replaced = await eventually(
      'the pods of the dead node are evicted and replaced on live nodes',
      async () => {
        const pods = await listPods(lab, 'default', 'app=web');
        const evicted = victims.every((v) =>
          pods.some((p) => p.metadata.name === v.metadata.name && p.metadata['deletionTimestamp']),
        );
        const live = pods.filter(
          (p) =>
            p.spec.nodeName !== dead.name &&
            p.status?.phase === 'Running' &&
            !p.metadata['deletionTimestamp'],
        );
        return evicted && live.length === 3 ? live : undefined;
      },
      { timeoutMs: 90_000, intervalMs: 500 },
    );
    await lab.saveState();
    const state = (await readState(dir))!;
    for (const pod of replaced) {
      const r = await probeFromRouter(state, pod.status!.podIPs![0]!.ip);
      expect(r).toEqual({ ok: true, reply: pod.metadata.name });
    }
  });
});

describe('scenario 3: the 2026-08-16 blackhole (a pinned pod evicted from a node whose kubelet died)', () => {
  it('the replacement on another node keeps the pinned address; only its node announces it', async () => {
    const live = lab.plans.slice(0, 2);
    await lab.apply(DEPLOYMENTS, samplePinned(5));
    const [old] = await waitForPods(lab, 'default', 'app=pinned', 1);
    const a = live.find((p) => p.name === old!.spec.nodeName)!;
    const b = live.find((p) => p !== a)!;
    expect(old!.status!.podIPs![0]!.ip).toBe(SAMPLE_PINNED6);
    await eventually(
      'the router reaches the pinned address through A',
      async () =>
        JSON.stringify(await lab.router!.nextHops(`${SAMPLE_PINNED6}/128`)) ===
        JSON.stringify([a.node6]),
    );
    const agentA = lab.node(a.name).agent!.child;

    await lab.killKubelet(a.name);
    // The pod on A is evicted but never confirmed (Terminating, same UID, still Running there);
    // its replacement comes up on B with the same pinned address.
    const fresh = await eventually(
      'the replacement Ready on the other node',
      async () => {
        const pods = await listPods(lab, 'default', 'app=pinned');
        return pods.find(
          (p) =>
            p.metadata.name !== old!.metadata.name && p.spec.nodeName === b.name && isPodReady(p),
        );
      },
      { timeoutMs: 120_000, intervalMs: 100 },
    );
    const readyAt = Date.now();
    expect(fresh.status!.podIPs![0]!.ip).toBe(SAMPLE_PINNED6);
    const state = (await readState(dir))!;
    await eventually(
      'the router reaches the live pod through B only',
      async () => {
        const hops = await lab.router!.nextHops(`${SAMPLE_PINNED6}/128`);
        if (JSON.stringify(hops) !== JSON.stringify([b.node6])) return false;
        const r = await probeFromRouter(state, SAMPLE_PINNED6);
        return r.reply === fresh.metadata.name;
      },
      { timeoutMs: 30_000, intervalMs: 100 },
    );
    console.log(
      `scenario 3: new pod Ready -> router reaches it via ${b.name} only: ${Date.now() - readyAt} ms`,
    );
    // The old copy still exists (Terminating) and A's agent lived through all of it.
    const pods = await listPods(lab, 'default', 'app=pinned');
    expect(
      pods.find((p) => p.metadata.name === old!.metadata.name)?.metadata['deletionTimestamp'],
    ).toBeDefined();
    expect(agentA.exitCode).toBeNull();
  });
});
