// The metrics the agent and the operator register, as their registries list them: each program
// started for real on the in-memory API server (the agent over the in-memory datapath, its BIRD
// and files in a temporary directory), the operator until it leads (its controllers' work queue
// and reconcile metrics exist only then). What the dashboard's queries are checked against.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { AgentConfig, startAgent } from '@flock/agent';
import { FakeDatapath } from '@flock/agent/testing';
import { nodeConfig } from '@flock/api/testing';
import { NODECONFIGS, NODES, silentLogger } from '@flock/kube';
import { FakeApiServer } from '@flock/kube/testing';
import { startOperator } from '@flock/operator';
import { eventually } from '@flock/testkit';
import { Registry } from 'prom-client';
import type { RegisteredMetric } from '../shared/dashboard.js';

const list = async (registry: Registry): Promise<RegisteredMetric[]> =>
  (await registry.getMetricsAsJSON()).map((m) => ({ name: m.name, type: String(m.type) }));

export async function agentMetrics(): Promise<RegisteredMetric[]> {
  const dir = await mkdtemp(join(tmpdir(), 'flock-dashboard-agent-'));
  const api = new FakeApiServer();
  api.putObject(NODES, { apiVersion: 'v1', kind: 'Node', metadata: { name: 'node-a' } });
  api.putObject(NODECONFIGS, nodeConfig());
  const registry = new Registry();
  try {
    const agent = await startAgent({
      config: AgentConfig.parse({
        nodeName: 'node-a',
        socketPath: join(dir, 'cni.sock'),
        storePath: join(dir, 'allocations.json'),
        birdConfigPath: join(dir, 'bird.conf'),
        birdSocketPath: join(dir, 'bird.ctl'),
        healthPort: 0,
      }),
      transport: api,
      datapath: new FakeDatapath(),
      logger: silentLogger,
      registry,
    });
    try {
      return await list(registry);
    } finally {
      await agent.stop();
    }
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

export async function operatorMetrics(): Promise<RegisteredMetric[]> {
  const registry = new Registry();
  const operator = await startOperator({
    transport: new FakeApiServer(),
    logger: silentLogger,
    identity: 'dashboard',
    namespace: 'flock-system',
    registry,
  });
  try {
    await eventually('the operator leads', () => operator.isLeader() || undefined);
    return await list(registry);
  } finally {
    await operator.stop();
  }
}
