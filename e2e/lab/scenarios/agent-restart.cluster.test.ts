// End-to-end scenario 6 on the whole lab: the agent of a node is restarted under running pods.
// Traffic from the router to those pods keeps flowing the whole time, and nothing is
// re-allocated: the pods keep their addresses, in the API and in the agent's store.
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { sampleDeployment } from '../core/plan.js';
import { readState, type LabState } from '../core/state.js';
import { probeFromRouter } from '../probes/status.js';
import { DEPLOYMENTS, listPods, waitForPods } from '../core/workloads.js';
import { startLab } from '../core/test-lab.js';

// The test's own workload only: the node also runs kube-system's pods (CoreDNS).
const storeIps = async (nodeDir: string) =>
  (
    JSON.parse(await readFile(join(nodeDir, 'lib', 'allocations.json'), 'utf8')) as {
      entries: { namespace: string; pod: string; ip6: string }[];
    }
  ).entries
    .filter((e) => e.namespace === 'default')
    .map((e) => `${e.pod}=${e.ip6}`)
    .sort();

const { lab, dir } = startLab({
  tmpPrefix: 'flock-lab-it-',
  tools: ['bird', 'nsenter', 'flock-controlplane'],
  nodes: 2,
  setup: async (lab) => {
    await lab.apply(DEPLOYMENTS, sampleDeployment(4));
    await waitForPods(lab, 'default', 'app=web', 4);
  },
});

describe('scenario 6: agent restarted under running pods', () => {
  it('no pod loses connectivity and nothing is re-allocated', async () => {
    const node = lab.nodes[0]!;
    await lab.saveState();
    const state: LabState = (await readState(dir))!;
    const onNode = (await listPods(lab, 'default', 'app=web')).filter(
      (p) => p.spec.nodeName === node.plan.name,
    );
    const pods = onNode.map((p) => ({
      pod: `default/${p.metadata.name}`,
      ips: (p.status?.podIPs ?? []).map((i) => i.ip),
    }));
    expect(pods.length).toBeGreaterThan(0);
    const storeBefore = await storeIps(node.dir);
    // The store holds exactly these pods with exactly these addresses.
    expect(storeBefore).toEqual(pods.map((p) => `${p.pod.split('/')[1]}=${p.ips[0]}`).sort());

    // Probe every pod of the node from the router, over and over, while the agent restarts.
    let restarting = true;
    const failures: string[] = [];
    let probes = 0;
    const prober = (async () => {
      while (restarting) {
        for (const pod of pods) {
          const r = await probeFromRouter(state, pod.ips[0]!);
          probes++;
          if (!r.ok) failures.push(`${pod.pod}: ${r.reply}`);
        }
      }
    })();
    await node.restartAgent();
    // Let the restarted agent run its first resync (--resync 5s) before looking again.
    await new Promise((r) => setTimeout(r, 6_000));
    restarting = false;
    await prober;

    expect(probes).toBeGreaterThan(pods.length);
    expect(failures).toEqual([]);
    expect(await storeIps(node.dir)).toEqual(storeBefore);
    const after = await waitForPods(lab, 'default', 'app=web', 4);
    for (const pod of pods) {
      const now = after.find((p) => `default/${p.metadata.name}` === pod.pod);
      expect(now?.status?.podIPs?.map((i) => i.ip)).toEqual(pod.ips);
    }
  });
});
