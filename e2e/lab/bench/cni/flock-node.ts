// One flock node for the benches: a real API server, the node's namespace, the real agent
// process (packages/agent/dist/src/main.js) and the plugin installed as the DaemonSet installs it,
// plus `pods` Pod objects bound to the node (the agent looks each ADD's pod up).
// Mode `in-node` (default) runs the agent inside the node namespace as production does;
// `host-netns` is the test harness's agent (--host-netns: nsenter / ip netns exec per command).
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { nodeConfig } from '@flock/api/testing';
import { NODECONFIGS } from '@flock/kube';
import { Netns } from '@flock/testkit';
import { TestNode, createTestPod, startTestCluster, type TestCluster } from '@flock/agent/testing';
import { startAgentInNode, type AgentInNode } from './agent-in-node.js';

export const NODE_NAME = 'bench-node';
export type AgentMode = 'in-node' | 'host-netns';

export interface FlockNode {
  node: TestNode;
  netns: Netns;
  /** The agent's pid (RSS). */
  agentPid: number;
  /** The agent's output lines so far (its JSON log). */
  logs: string[];
  pod: (i: number) => { name: string; uid: string };
  /**
   * What the kubelet writes once pod `i`'s sandbox has its network: its addresses with the
   * phase Running, then the Ready condition (two status writes, as a pod with a readiness probe).
   */
  kubeletStatus(i: number, ips: readonly string[]): Promise<void>;
  stop(): Promise<void>;
}

/** The agent image's Node flags: NODE_OPTIONS plus --lite-mode (images/agent/Dockerfile). */
export const AGENT_IMAGE_NODE_FLAGS = [
  '--max-old-space-size=128',
  '--max-semi-space-size=1',
  '--lite-mode',
];

export async function startFlockNode(
  pods: number,
  mode: AgentMode,
  nodeArgs: string[] = [],
): Promise<FlockNode> {
  const dir = await mkdtemp(join(tmpdir(), 'flock-bench-node-'));
  let cluster: TestCluster | undefined;
  let netns: Netns | undefined;
  let node: TestNode | undefined;
  let inNode: AgentInNode | undefined;
  const stop = async () => {
    await node?.agent?.stop();
    await inNode?.stop();
    await netns?.destroy();
    await cluster?.cp.stop();
    await rm(dir, { recursive: true, force: true });
  };
  try {
    cluster = await startTestCluster(NODE_NAME);
    netns = await Netns.create('bnode');
    node = new TestNode({ cp: cluster.cp, nodeName: NODE_NAME, netns, dir });
    await node.installPlugin();
    // A /22 for IPv4: released addresses stay in quarantine, and two rounds of pods follow.
    await cluster.apply(
      NODECONFIGS,
      nodeConfig({ name: NODE_NAME, spec: { pool: 'bench', cidr4: '100.64.0.0/22' } }),
    );
    const uids: string[] = [];
    for (let i = 0; i < pods; i++) {
      uids.push(
        await createTestPod(cluster.api, {
          name: `bench-${i}`,
          nodeName: NODE_NAME,
          labels: { app: 'bench' },
        }),
      );
    }
    let agentPid: number | undefined;
    let logs: string[] = [];
    if (mode === 'in-node') {
      inNode = await startAgentInNode({
        cp: cluster.cp,
        netns,
        dir,
        nodeName: NODE_NAME,
        socketPath: node.socketPath,
        storePath: node.storePath,
        birdConfigPath: node.birdConfigPath,
        birdSocketPath: node.birdSocketPath,
        nodeArgs,
      });
      agentPid = inNode.pid;
      logs = inNode.logs;
    } else {
      const agent = await node.startAgent();
      agentPid = agent.child.pid;
      logs = agent.logs;
    }
    if (agentPid === undefined) throw new Error('the agent process has no pid');
    return {
      node,
      netns,
      agentPid,
      logs,
      pod: (i) => ({ name: `bench-${i}`, uid: uids[i]! }),
      kubeletStatus: async (i, ips) => {
        const api = cluster!.api;
        const write = (status: unknown) =>
          api.request({
            method: 'PATCH',
            path: `/api/v1/namespaces/default/pods/bench-${i}/status`,
            contentType: 'application/merge-patch+json',
            body: { status },
          });
        const now = new Date().toISOString();
        const condition = (type: string, status: string) => ({
          type,
          status,
          lastTransitionTime: now,
        });
        await write({
          phase: 'Running',
          podIP: ips[0],
          podIPs: ips.map((ip) => ({ ip })),
          conditions: [condition('PodScheduled', 'True'), condition('Ready', 'False')],
        });
        await write({
          conditions: [condition('PodScheduled', 'True'), condition('Ready', 'True')],
        });
      },
      stop,
    };
  } catch (error) {
    await stop();
    throw error;
  }
}
