// What differs on a real node, each on the lab's real nodes (containerd 2.4 and runc calling
// flock's plugin, the real kubelet): the runtime's CNI STATUS turning the node NotReady while
// the agent is down; a failed ADD (the node's IPv4 slice exhausted) leaving nothing behind and
// the kubelet retrying it; a sandbox killed under the kubelet and re-created with a new
// container ID; containerd and the kubelet restarted under running pods.
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { setTimeout as delay } from 'node:timers/promises';
import { objectPath, PODS } from '@flock/kube';
import { eventually } from '@flock/testkit';
import { describe, expect, it } from 'vitest';
import { stopDaemon } from '../../shared/daemon.js';
import type { LabNode } from '../node/lab-node.js';
import { workloadContainer } from '../core/plan.js';
import { readState } from '../core/state.js';
import { probeFromRouter } from '../probes/status.js';
import { listPods, waitForPods, type LabPod } from '../core/workloads.js';
import { startLab } from '../core/test-lab.js';

// A /29 per node: eight IPv4 addresses, so a handful of pods exhausts a node's slice. A short
// quarantine, so that a freed address is handed out again within the test. No cluster DNS: the
// tests count every allocation and veth of a node, and a node's reboot would move CoreDNS.
const { lab, dir } = startLab({
  tmpPrefix: 'flock-lab-rt-',
  tools: ['bird', 'nsenter', 'flock-controlplane', 'kubectl'],
  nodes: 2,
  nodePrefix4: 29,
  agentArgs: ['--address-quarantine', '1s'],
  clusterDns: false,
});

/**
 * A bare pod bound to `node` (no scheduler, no controller replacing it), label app=LABEL;
 * `stay` tolerates the node being NotReady or unreachable for good (it is not evicted while its
 * node reboots).
 */
async function createPod(name: string, node: string, label: string, stay = false): Promise<void> {
  const tolerations = ['node.kubernetes.io/not-ready', 'node.kubernetes.io/unreachable'].map(
    (key) => ({ key, operator: 'Exists', effect: 'NoExecute' }),
  );
  await lab.api!.request({
    method: 'POST',
    path: '/api/v1/namespaces/default/pods',
    body: {
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name, namespace: 'default', labels: { app: label } },
      spec: {
        nodeName: node,
        terminationGracePeriodSeconds: 1,
        containers: [workloadContainer('w')],
        ...(stay ? { tolerations } : {}),
      },
    },
  });
}

async function deletePod(name: string): Promise<void> {
  await lab.api!.request({ method: 'DELETE', path: objectPath(PODS, name, 'default') });
}

async function deletePods(label: string): Promise<void> {
  for (const p of await listPods(lab, 'default', `app=${label}`)) await deletePod(p.metadata.name);
  await eventually(
    `pods app=${label} gone`,
    async () => (await listPods(lab, 'default', `app=${label}`)).length === 0,
    { timeoutMs: 60_000, intervalMs: 500 },
  );
}

interface Condition {
  type: string;
  status: string;
  message?: string;
}

async function readyCondition(node: string): Promise<Condition | undefined> {
  const n = (await lab.api!.request({ method: 'GET', path: `/api/v1/nodes/${node}` })) as {
    status?: { conditions?: Condition[] };
  };
  return n.status?.conditions?.find((c) => c.type === 'Ready');
}

const running = (p: LabPod) =>
  p.status?.phase === 'Running' &&
  (p.status.podIPs ?? []).length > 0 &&
  !p.metadata['deletionTimestamp'];

interface StoreEntry {
  containerID: string;
  pod: string;
  ip6: string;
  ip4?: string;
  state: string;
}

async function store(node: LabNode): Promise<StoreEntry[]> {
  const text = await readFile(join(node.dir, 'lib', 'allocations.json'), 'utf8');
  return (JSON.parse(text) as { entries: StoreEntry[] }).entries;
}

/** flock's host-side veths on the node. */
async function veths(node: LabNode): Promise<string[]> {
  const { stdout } = await node.ns.enter('ip', ['-j', 'link', 'show', 'type', 'veth']);
  return (JSON.parse(stdout) as { ifname: string }[])
    .map((l) => l.ifname)
    .filter((n) => n.startsWith('flock'))
    .sort();
}

/** The pod's sandbox ID and its pause process (crictl, the CRI as the kubelet sees it). */
async function sandboxOf(node: LabNode, pod: string): Promise<{ id: string; pid: number }> {
  const { stdout } = await node.crictl(['pods', '--name', `^${pod}$`, '--state', 'ready', '-q']);
  const id = stdout.trim().split('\n')[0];
  if (!id) throw new Error(`no ready sandbox for ${pod}`);
  const info = JSON.parse((await node.crictl(['inspectp', id])).stdout) as {
    info?: { pid?: number };
  };
  const pid = info.info?.pid;
  if (!pid) throw new Error(`no pid for sandbox ${id}`);
  return { id, pid };
}

describe('the runtime on a real node', () => {
  it('the node is NotReady (NetworkReady=false) while the agent is down, Ready within 10 s of its return', async () => {
    const node = lab.nodes[1]!;
    expect((await readyCondition(node.plan.name))?.status).toBe('True');
    await stopDaemon(node.agent);
    const down = await eventually(
      'the node NotReady because the runtime network is not ready',
      async () => {
        const c = await readyCondition(node.plan.name);
        return c?.status === 'False' && c.message?.includes('NetworkReady=false') ? c : undefined;
      },
      { timeoutMs: 60_000, intervalMs: 250 },
    );
    expect(down.message).toContain('flock');
    await node.startAgent();
    const back = Date.now();
    await eventually(
      'the node Ready again',
      async () => (await readyCondition(node.plan.name))?.status === 'True',
      { timeoutMs: 30_000, intervalMs: 100 },
    );
    const took = Date.now() - back;
    console.log(`runtime: agent ready -> node Ready: ${took} ms`);
    expect(took).toBeLessThan(10_000);
  });

  it('an ADD that fails (IPv4 slice exhausted) leaves nothing behind; the kubelet retries once there is room', async () => {
    const node = lab.nodes[0]!;
    const name = node.plan.name;
    const names = Array.from({ length: 9 }, (_, i) => `fill-${i}`);
    for (const n of names) await createPod(n, name, 'fill');
    // Some run; the rest stay without a sandbox, with the runtime's FailedCreatePodSandBox.
    const settled = await eventually(
      'the slice full and the rest refused',
      async () => {
        const pods = await listPods(lab, 'default', 'app=fill');
        const up = pods.filter(running);
        const events = (await lab.api!.request({
          method: 'GET',
          path: '/api/v1/namespaces/default/events',
          query: { fieldSelector: 'reason=FailedCreatePodSandBox' },
        })) as { items: { message?: string; involvedObject?: { name?: string } }[] };
        const refused = events.items.filter((e) => e.message?.includes('exhausted'));
        if (up.length + new Set(refused.map((e) => e.involvedObject?.name)).size < names.length)
          return undefined;
        return { up, refused };
      },
      { timeoutMs: 120_000, intervalMs: 500 },
    );
    const capacity = settled.up.length;
    expect(capacity).toBeGreaterThan(0);
    expect(capacity).toBeLessThan(names.length);
    // Nothing of the refused pods is left: the store holds exactly the running pods, all
    // committed, and the node has exactly their veths.
    const entries = await store(node);
    expect(entries.map((e) => e.state)).toEqual(entries.map(() => 'committed'));
    expect(entries.map((e) => e.pod).sort()).toEqual(settled.up.map((p) => p.metadata.name).sort());
    expect((await veths(node)).length).toBe(capacity);
    // Room again: one pod goes, and the kubelet's retry gives a waiting pod its addresses.
    const [victim] = settled.up;
    await deletePod(victim!.metadata.name);
    await eventually(
      'a refused pod running once an address is free',
      async () => {
        const pods = await listPods(lab, 'default', 'app=fill');
        return pods.filter(running).length === capacity ? pods : undefined;
      },
      { timeoutMs: 120_000, intervalMs: 500 },
    );
    await deletePods('fill');
    expect(await store(node)).toEqual([]);
    expect(await veths(node)).toEqual([]);
  });

  it('a sandbox killed under the kubelet is re-created with a new container ID; nothing leaks', async () => {
    const node = lab.nodes[0]!;
    await createPod('phoenix', node.plan.name, 'phoenix');
    const [before] = await waitForPods(lab, 'default', 'app=phoenix', 1);
    const old = await sandboxOf(node, 'phoenix');
    expect((await store(node)).map((e) => e.containerID)).toEqual([old.id]);
    process.kill(old.pid, 'SIGKILL');
    const fresh = await eventually(
      'a new sandbox, with the pod running again',
      async () => {
        const s = await sandboxOf(node, 'phoenix').catch(() => undefined);
        const [pod] = await listPods(lab, 'default', 'app=phoenix');
        return s && s.id !== old.id && pod && running(pod) ? { s, pod } : undefined;
      },
      { timeoutMs: 90_000, intervalMs: 500 },
    );
    // The old allocation went with the old sandbox (DEL), the new one is the only one.
    await eventually(
      'exactly the new sandbox in the store and one veth',
      async () => {
        const entries = await store(node);
        return entries.length === 1 &&
          entries[0]!.containerID === fresh.s.id &&
          (await veths(node)).length === 1
          ? true
          : undefined;
      },
      { timeoutMs: 30_000 },
    );
    // The kubelet reports the new sandbox's addresses a moment after the pod runs again: wait
    // until every address in the pod's status is routed on the node (the old ones are not).
    const ips = await eventually(
      "the pod's status showing the new sandbox's addresses",
      async () => {
        const [pod] = await listPods(lab, 'default', 'app=phoenix');
        const now = (pod?.status?.podIPs ?? []).map((i) => i.ip);
        if (!now.length) return undefined;
        for (const ip of now) {
          const family = ip.includes(':') ? '-6' : '-4';
          const route = await node.ns.enter('ip', [family, 'route', 'show', ip]);
          if (!route.stdout.trim()) return undefined;
        }
        return now;
      },
      { timeoutMs: 30_000, intervalMs: 250 },
    );
    const state = (await readState(dir))!;
    for (const ip of ips)
      expect(await probeFromRouter(state, ip)).toEqual({ ok: true, reply: 'phoenix' });
    // An address the old sandbox had and the new one has not is no longer routed on the node.
    for (const { ip } of before!.status!.podIPs!.filter((i) => !ips.includes(i.ip))) {
      const family = ip.includes(':') ? '-6' : '-4';
      expect((await node.ns.enter('ip', [family, 'route', 'show', ip])).stdout.trim()).toBe('');
    }
    await deletePods('phoenix');
  });

  for (const what of ['containerd', 'the kubelet'] as const) {
    it(`${what} restarted under running pods: they keep their addresses and connectivity`, async () => {
      const node = lab.nodes[1]!;
      const label = what === 'containerd' ? 'steady-c' : 'steady-k';
      for (let i = 0; i < 2; i++) await createPod(`${label}-${i}`, node.plan.name, label);
      const pods = await waitForPods(lab, 'default', `app=${label}`, 2);
      const sandboxes = await Promise.all(pods.map((p) => sandboxOf(node, p.metadata.name)));
      const storeBefore = await store(node);
      const state = (await readState(dir))!;
      let on = true;
      const failures: string[] = [];
      let probes = 0;
      const prober = (async () => {
        while (on) {
          for (const p of pods)
            for (const { ip } of p.status!.podIPs!) {
              const r = await probeFromRouter(state, ip);
              probes++;
              if (!r.ok) failures.push(`${p.metadata.name} [${ip}]: ${r.reply}`);
            }
        }
      })();
      if (what === 'containerd') await node.restartContainerd();
      else {
        await node.killKubelet();
        await delay(2_000);
        await node.startKubelet();
      }
      // The restarted daemon's first syncs (kubelet: syncFrequency 10 s).
      await delay(12_000);
      on = false;
      await prober;
      expect(probes).toBeGreaterThan(4);
      expect(failures).toEqual([]);
      const after = await waitForPods(lab, 'default', `app=${label}`, 2);
      for (const p of pods) {
        const now = after.find((a) => a.metadata.name === p.metadata.name);
        expect(now?.status?.podIPs).toEqual(p.status!.podIPs);
      }
      // The same sandboxes (nothing re-created) and the same allocations.
      for (const [i, p] of pods.entries())
        expect((await sandboxOf(node, p.metadata.name)).id).toBe(sandboxes[i]!.id);
      expect(await store(node)).toEqual(storeBefore);
      await deletePods(label);
    });
  }
});

describe('a node reboot (the runtime loses its state; no runtime sends CNI GC)', () => {
  // containerd 2.4 never sends CNI GC (it calls STATUS only): allocations of sandboxes that no
  // longer exist must still be released. After a reboot every sandbox is gone with the node's
  // runtime state; the kubelet makes new ones.
  it('pods come back in new sandboxes; the dead sandboxes’ allocations are released', async () => {
    const node = lab.nodes[1]!;
    for (let i = 0; i < 2; i++) await createPod(`boot-${i}`, node.plan.name, 'boot', true);
    const pods = await waitForPods(lab, 'default', 'app=boot', 2);
    const before = await Promise.all(pods.map((p) => sandboxOf(node, p.metadata.name)));
    await node.powerOff();
    await delay(2_000);
    await node.reboot();
    const after = await eventually(
      'both pods running in new sandboxes',
      async () => {
        const now = await Promise.all(
          pods.map((p) => sandboxOf(node, p.metadata.name).catch(() => undefined)),
        );
        const listed = await listPods(lab, 'default', 'app=boot');
        if (now.every((s, i) => s && s.id !== before[i]!.id) && listed.filter(running).length === 2)
          return now.map((s) => s!.id);
        throw new Error(
          `sandboxes ${now.map((s) => s?.id.slice(0, 12) ?? '-').join(',')} (before ${before.map((s) => s.id.slice(0, 12)).join(',')}); pods ${listed.map((p) => `${p.metadata.name}:${p.status?.phase}`).join(',')}`,
        );
      },
      { timeoutMs: 120_000, intervalMs: 500 },
    );
    await eventually(
      'only the new sandboxes hold allocations, one veth each',
      async () => {
        const ids = (await store(node)).map((e) => e.containerID).sort();
        return JSON.stringify(ids) === JSON.stringify([...after].sort()) &&
          (await veths(node)).length === 2
          ? true
          : undefined;
      },
      { timeoutMs: 60_000 },
    );
    const state = (await readState(dir))!;
    for (const p of await listPods(lab, 'default', 'app=boot'))
      for (const { ip } of p.status!.podIPs!)
        expect(await probeFromRouter(state, ip)).toEqual({ ok: true, reply: p.metadata.name });
    await deletePods('boot');
  });
});
