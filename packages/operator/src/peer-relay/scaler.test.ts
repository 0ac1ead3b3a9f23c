import {
  Cache,
  DEPLOYMENTS,
  NODES,
  objectPath,
  resourceListWatch,
  type KubeObject,
} from '@flock/kube';
import { createMemoryLogger, FakeApiServer } from '@flock/kube/testing';
import { eventually } from '@flock/testkit';
import { afterEach, describe, expect, it } from 'vitest';
import { RelayScaler, relayReplicas } from './scaler.js';

const scale = { nodesPerReplica: 200, minReplicas: 2, maxReplicas: 20 };

describe('relayReplicas', () => {
  it('one replica a nodesPerReplica nodes, within min and max, never more than the nodes', () => {
    expect(relayReplicas(1, scale)).toBe(1);
    expect(relayReplicas(2, scale)).toBe(2);
    expect(relayReplicas(400, scale)).toBe(2);
    expect(relayReplicas(401, scale)).toBe(3);
    expect(relayReplicas(5_000, scale)).toBe(20);
    expect(relayReplicas(0, scale)).toBe(0);
    // A fixed count: min = max (0: none).
    expect(relayReplicas(50, { nodesPerReplica: 1, minReplicas: 3, maxReplicas: 3 })).toBe(3);
    expect(relayReplicas(50, { nodesPerReplica: 1, minReplicas: 0, maxReplicas: 0 })).toBe(0);
  });
});

let stop: (() => Promise<unknown>) | undefined;
afterEach(async () => {
  await stop?.();
  stop = undefined;
});

const node = (name: string) => ({ apiVersion: 'v1', kind: 'Node', metadata: { name } });
const deployment = (replicas?: number) => ({
  apiVersion: 'apps/v1',
  kind: 'Deployment',
  metadata: { name: 'flock-peer-relay', namespace: 'flock-system' },
  spec: { ...(replicas === undefined ? {} : { replicas }), template: {} },
});

/** A scaler of flock-system/flock-peer-relay over `server`'s nodes, started. */
function startScaler(server: FakeApiServer, s: typeof scale) {
  const logger = createMemoryLogger();
  const nodes = new Cache<KubeObject>({ source: resourceListWatch(server, NODES), logger });
  const scaler = new RelayScaler({
    transport: server,
    nodes,
    namespace: 'flock-system',
    deployment: 'flock-peer-relay',
    logger,
    ...s,
  });
  stop = () => Promise.all([scaler.stop(), nodes.stop()]);
  nodes.start();
  scaler.start();
  return { scaler, logger };
}

describe('RelayScaler', () => {
  it("writes the relay Deployment's replicas as nodes come and go, and only when they differ", async () => {
    const server = new FakeApiServer();
    for (let i = 0; i < 3; i++) server.putObject(NODES, node(`n${i}`));
    server.register(DEPLOYMENTS);
    server.putObject(DEPLOYMENTS, deployment());
    const { scaler, logger } = startScaler(server, {
      nodesPerReplica: 2,
      minReplicas: 1,
      maxReplicas: 3,
    });
    const replicas = () =>
      (
        server.getObject(DEPLOYMENTS, 'flock-peer-relay', 'flock-system') as {
          spec: { replicas?: number };
        }
      ).spec.replicas;
    await eventually('2 replicas for 3 nodes', () => replicas() === 2);
    const patches = () =>
      server.requests.filter(
        (r) =>
          r.method === 'PATCH' &&
          r.path === objectPath(DEPLOYMENTS, 'flock-peer-relay', 'flock-system'),
      ).length;
    await scaler.runOnce();
    expect(patches()).toBe(1);
    for (let i = 3; i < 9; i++) server.putObject(NODES, node(`n${i}`));
    await eventually('the most, 3, for 9 nodes', () => replicas() === 3, { timeoutMs: 10_000 });
    expect(logger.find('info', 'peer relay scaled')).toHaveLength(2);
  });

  it('does nothing while the relay Deployment is not there', async () => {
    const server = new FakeApiServer();
    server.register(DEPLOYMENTS);
    server.putObject(NODES, node('n0'));
    const { scaler, logger } = startScaler(server, scale);
    await scaler.runOnce();
    expect(server.requests.filter((r) => r.method === 'PATCH')).toEqual([]);
    expect(logger.find('warn', 'cannot scale')).toEqual([]);
  });
});
