// Two flock-operator processes against one real API server for ten rounds of node churn:
// exactly one leads at any time, a graceful stop (round 4) and a crash (SIGKILL, round 7) of
// the leader hand over to the other, and across everything no prefix is ever given to two
// nodes, none moves, and freed ones stay quarantined (watched on every NodeConfig event).
import { NodeConfig } from '@flock/api';
import { Cache, NODECONFIGS, resourceListWatch } from '@flock/kube';
import { createMemoryLogger } from '@flock/kube/testing';
import { eventually } from '@flock/testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { spawnOperator, type OperatorProcess } from '../testing/child.js';
import {
  applyPool,
  createNode,
  deleteNode,
  getPool,
  listNodeConfigs,
  NAMESPACE,
  startCluster,
  type Cluster,
} from '../testing/cluster.js';
import { baseSpec } from '../testing/fixtures.js';

const FLAGS = [
  '--namespace',
  NAMESPACE,
  '--lease-duration=4s',
  '--renew-deadline=3s',
  '--retry-period=500ms',
];
const ROUNDS = 10;
const PER_ROUND = 4;

let c: Cluster;
const procs: OperatorProcess[] = [];
const violations: string[] = [];
let watcher: Cache<NodeConfig>;
let sampler: ReturnType<typeof setInterval>;
let spawned = 0;

beforeAll(async () => {
  c = await startCluster(['etcd', 'apiserver', 'controller-manager']);
  // Every NodeConfig state the API server ever shows: one prefix, one node, forever.
  const holder = new Map<string, string>();
  const prefixOfUid = new Map<string, string>();
  watcher = new Cache({
    source: resourceListWatch(c.api, NODECONFIGS),
    schema: NodeConfig,
    logger: createMemoryLogger(),
  });
  const check = (nc: NodeConfig) => {
    for (const p of [nc.spec.cidr6, nc.spec.cidr4]) {
      if (!p) continue;
      const h = holder.get(p);
      if (h !== undefined && h !== nc.metadata.name)
        violations.push(`${p} given to ${h} and to ${nc.metadata.name}`);
      holder.set(p, nc.metadata.name);
    }
    const uid = nc.metadata.uid as string;
    const was = prefixOfUid.get(uid);
    if (was !== undefined && was !== nc.spec.cidr6)
      violations.push(`${nc.metadata.name} moved from ${was} to ${nc.spec.cidr6}`);
    prefixOfUid.set(uid, nc.spec.cidr6);
  };
  watcher.addHandler({ onAdd: check, onUpdate: (_, nc) => check(nc) });
  watcher.start();
  // Never two leaders at once (as each process itself reports it).
  sampler = setInterval(() => {
    void Promise.all(procs.filter((p) => p.running).map((p) => p.leading())).then((states) => {
      if (states.filter((s) => s === 1).length > 1)
        violations.push(`two leaders at ${new Date().toISOString()}`);
    });
  }, 250);
});
afterAll(async () => {
  clearInterval(sampler);
  await Promise.all(procs.map((p) => p.stop()));
  await watcher?.stop();
  await c?.cp.stop();
});

async function spawn(): Promise<OperatorProcess> {
  const p = await spawnOperator(`replica-${spawned++}`, c.cp.kubeconfigPath, FLAGS);
  procs.push(p);
  return p;
}

const leader = () =>
  eventually(
    'a leader',
    async () => {
      const live = procs.filter((p) => p.running);
      const states = await Promise.all(live.map((p) => p.leading()));
      return live.find((_, i) => states[i] === 1);
    },
    { timeoutMs: 30_000 },
  );

describe('two operators at once', () => {
  it('one leads; leader changes lose nothing and no prefix is handed out twice', async () => {
    await applyPool(c, 'ha', {
      ...baseSpec(),
      nodeSelector: { matchLabels: { test: 'ha' } },
      ipv6: { cidr: '2001:db8:30::/56', nodePrefixLength: 64 },
      ipv4: { cidr: '10.30.0.0/20', nodePrefixLength: 28 },
    });
    await spawn();
    await spawn();
    const alive = new Set<string>();
    const gone = new Set<string>();
    const leaders: string[] = [];
    for (let round = 0; round < ROUNDS; round++) {
      const current = await leader();
      leaders.push(current.name);
      const created = Array.from({ length: PER_ROUND }, (_, i) => `ha-${round}-${i}`);
      const writes = Promise.all(created.map((n) => createNode(c.api, n, { test: 'ha' })));
      created.forEach((n) => alive.add(n));
      // The leader changes while it has work in hand: nodes are arriving as it goes.
      if (round === 4) {
        expect(await current.stop()).toEqual({ code: 0, signal: null }); // a rolling update
        await spawn();
      } else if (round === 7) {
        current.kill('SIGKILL'); // a crash: the Lease must expire first
        await current.exited;
        await spawn();
      }
      await writes;
      if (round > 0) {
        const victim = `ha-${round - 1}-0`;
        await deleteNode(c.api, victim);
        alive.delete(victim);
        gone.add(victim);
      }
      await eventually(
        `round ${round} converged`,
        async () => {
          const ncs = await listNodeConfigs(c.api);
          const names = new Set(
            ncs.filter((nc) => nc.spec.pool === 'ha').map((nc) => nc.metadata.name),
          );
          return [...alive].every((n) => names.has(n)) && [...gone].every((n) => !names.has(n));
        },
        { timeoutMs: 120_000 },
      );
      expect(violations).toEqual([]);
    }
    expect(new Set(leaders).size).toBeGreaterThanOrEqual(2);
    const pool = await getPool(c.api, 'ha');
    expect(pool?.status?.ipv6).toMatchObject({ allocated: alive.size, quarantined: gone.size });
    expect(
      pool?.status?.quarantine
        ?.map((q) => q.node)
        .filter((n) => n !== undefined)
        .sort(),
    ).toEqual([...gone, ...gone].sort());
    const ncs = (await listNodeConfigs(c.api)).filter((nc) => nc.spec.pool === 'ha');
    expect(new Set(ncs.map((nc) => nc.spec.cidr6)).size).toBe(ncs.length);
    expect(new Set(ncs.map((nc) => nc.spec.cidr4)).size).toBe(ncs.length);
    for (const p of procs.filter((x) => x.running)) {
      expect(p.logs.filter((l) => l.level === 'error').map((l) => l.message)).toEqual([]);
    }
  });
});
