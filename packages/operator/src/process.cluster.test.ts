// flock-operator as the real process a Deployment runs (node dist/src/main.js, a kubeconfig,
// flags): it serves health, readiness and metrics, logs JSON, stops cleanly on SIGTERM
// (exit 0, Lease released), and a restarted process keeps every assignment as it was.
import type { NodeConfig } from '@flock/api';
import { eventually } from '@flock/testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { spawnOperator, type OperatorProcess } from '../testing/child.js';
import {
  applyPool,
  configsOf,
  createNode,
  NAMESPACE,
  startCluster,
  type Cluster,
} from '../testing/cluster.js';
import { baseSpec } from '../testing/fixtures.js';

let c: Cluster;
const procs: OperatorProcess[] = [];
beforeAll(async () => {
  c = await startCluster();
});
afterAll(async () => {
  await Promise.all(procs.map((p) => p.stop()));
  await c?.cp.stop();
});

async function start(name: string, flags: string[] = []) {
  const p = await spawnOperator(name, c.cp.kubeconfigPath, ['--namespace', NAMESPACE, ...flags]);
  procs.push(p);
  return p;
}

const leaseHolder = async () =>
  JSON.parse(await c.kubectl('get', 'lease', '-n', NAMESPACE, 'flock-operator', '-o', 'json')).spec
    .holderIdentity as string | undefined;

const summary = (m: Map<string, NodeConfig>) =>
  Object.fromEntries(
    [...m].map(([n, nc]) => [
      n,
      {
        uid: nc.metadata.uid,
        generation: nc.metadata.generation,
        cidr6: nc.spec.cidr6,
        cidr4: nc.spec.cidr4,
      },
    ]),
  );

describe('flock-operator process', () => {
  it('serves health, readiness and metrics, logs JSON, stops on SIGTERM, and keeps assignments across a restart', async () => {
    await applyPool(c, 'p', {
      ...baseSpec(),
      nodeSelector: { matchLabels: { test: 'p' } },
      ipv6: { cidr: '2001:db8:20::/56', nodePrefixLength: 64 },
      ipv4: { cidr: '10.20.0.0/24', nodePrefixLength: 28 },
    });
    for (let i = 0; i < 6; i++) await createNode(c.api, `p-${i}`, { test: 'p' });
    const first = await start('first', ['--log-level', 'debug', '--prefix-quarantine', '1h']);
    await eventually('ready', async () => (await first.get('/readyz'))?.status === 200, {
      timeoutMs: 60_000,
    });
    const before = await eventually('6 NodeConfigs', async () => {
      const m = await configsOf(c.api, 'p');
      return m.size === 6 ? m : undefined;
    });
    expect((await first.get('/healthz'))?.status).toBe(200);
    expect((await first.get('/readyz?verbose'))?.text).toContain('[+]leader-election ok');
    const metrics = (await first.get('/metrics'))!.text;
    expect(metrics).toContain(
      'flock_operator_leader_is_leader{lease="flock-system/flock-operator"} 1',
    );
    expect(metrics).toMatch(/flock_operator_process_resident_memory_bytes \d+/);
    // The operator's own cache sees what it wrote a watch event later than the API does.
    await eventually('the nodeconfigs cache holds 6', async () =>
      /flock_operator_cache_objects\{cache="nodeconfigs"\} 6/.test(
        (await first.get('/metrics'))?.text ?? '',
      ),
    );
    expect(await leaseHolder()).toMatch(/^first_[0-9a-f]{8}$/);

    expect(await first.stop()).toEqual({ code: 0, signal: null });
    expect(first.otherOutput).toEqual([]);
    expect(first.logs.find((l) => l.message === 'became leader')).toMatchObject({
      level: 'info',
      component: 'operator',
    });
    expect(first.logs.some((l) => l.level === 'debug')).toBe(true);
    expect(first.logs.filter((l) => l.level === 'error')).toEqual([]);
    expect(first.logs.map((l) => l.message)).toEqual(
      expect.arrayContaining(['shutting down', 'released the lease', 'operator stopped']),
    );
    expect(await leaseHolder()).toBeFalsy();

    // Nodes arrive while no operator runs; the next one configures them and touches nothing else.
    await createNode(c.api, 'p-6', { test: 'p' });
    await createNode(c.api, 'p-7', { test: 'p' });
    const second = await start('second');
    const after = await eventually(
      '8 NodeConfigs',
      async () => {
        const m = await configsOf(c.api, 'p');
        return m.size === 8 ? m : undefined;
      },
      { timeoutMs: 60_000 },
    );
    const kept = summary(after);
    expect(Object.fromEntries(Object.entries(kept).filter(([n]) => before.has(n)))).toEqual(
      summary(before),
    );
    expect([kept['p-6']?.cidr6, kept['p-7']?.cidr6]).toEqual([
      '2001:db8:20:6::/64',
      '2001:db8:20:7::/64',
    ]);
    expect(await second.stop()).toEqual({ code: 0, signal: null });
  });

  it('refuses bad flags with exit code 2 and says why', async () => {
    const bad = await start('bad', ['--concurrency', 'lots']);
    expect((await bad.exited).code).toBe(2);
    expect(bad.otherOutput.join('\n')).toContain('--concurrency: "lots" is not a whole number');
  });
});
