#!/usr/bin/env node
// Lab benchmark (issue #21): a node dies → every route of that node is gone from the router.
//   node e2e/dist/lab/bench/node-failure.js [--kills N] [--interval MS] [--bfd on|off]
// A lab of 3 nodes (agents, BIRDs and BFD speakers as processes). N times (default 20), round
// robin over the nodes, the node loses power (LabNode.powerOff: every process of its cgroup tree
// killed, its uplink down); `ip -ts monitor route` in the router namespace stamps each deletion,
// and the figure is the time from the power-off to the deletion of the node's last route (its
// /64 and its IPv4 slice). Then the node boots again (LabNode.reboot), and the next kill waits
// until the router has its routes back and its BFD session is Up. The Pool's BFD runs at
// `--interval MS` × 3 (default 200; the sample Pool's own is 300). `--bfd off` takes BFD out of
// the Pool instead: the router then keeps the routes as a graceful-restart helper until the
// restart time (about two minutes a kill: use a small N).
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as delay } from 'node:timers/promises';
import { POOLS, createLogger } from '@flock/kube';
import { eventually, table } from '@flock/testkit';
import { Lab } from '../core/lab.js';
import { samplePool } from '../core/plan.js';
import { routeEvents } from '../probes/route-events.js';

const NODES = 3;
const arg = (name: string) => {
  const i = process.argv.indexOf(name);
  return i > 0 ? process.argv[i + 1] : undefined;
};
const KILLS = Number(arg('--kills') ?? 20);
if (!Number.isInteger(KILLS) || KILLS < 1 || KILLS > 500) throw new Error('--kills: 1..500');
const BFD = arg('--bfd') ?? 'on';
if (BFD !== 'on' && BFD !== 'off') throw new Error('--bfd: on or off');
const INTERVAL = Number(arg('--interval') ?? 200);
if (!Number.isInteger(INTERVAL) || INTERVAL < 50 || INTERVAL > 10_000)
  throw new Error('--interval: 50..10000 ms');

/** The sample Pool with its peers' BFD at INTERVAL × 3, or without BFD (`--bfd off`). */
function benchPool(): object {
  const pool = samplePool() as { spec: { bgp: { peers: Record<string, unknown>[] } } };
  for (const peer of pool.spec.bgp.peers) {
    delete peer['bfd'];
    delete peer['bfdTimers'];
    if (BFD === 'on') {
      peer['bfd'] = true;
      peer['bfdTimers'] = { minRxIntervalMs: INTERVAL, minTxIntervalMs: INTERVAL, multiplier: 3 };
    }
  }
  return pool;
}

async function main(): Promise<void> {
  const dir = await mkdtemp(join(tmpdir(), 'flock-lab-bench-node-failure-'));
  const lab = new Lab({ nodes: NODES, dir, log: createLogger('lab', 'error') });
  const say = (l: string) => console.error(`node-failure bench: ${l}`);
  const ms: number[] = [];
  try {
    await lab.up();
    const router = lab.router!;
    await lab.apply(POOLS, benchPool());
    await delay(5_000); // the agents and speakers re-render (sessions renegotiate their interval)
    const monitor = router.monitorRoutes(['-ts']);
    for (let k = 0; k < KILLS; k++) {
      const plan = lab.plans[k % NODES]!;
      const node = lab.node(plan.name);
      const routes = await eventually(
        `${plan.name}: its routes at the router${BFD === 'on' ? ', BFD Up' : ''}`,
        async () => {
          if (BFD === 'on' && (await router.bfdState(plan.node6)) !== 'Up') return undefined;
          const mine = (await router.routes()).filter((r) => r.via.includes(plan.node6));
          return mine.length >= 2 ? mine.map((r) => r.prefix) : undefined;
        },
        { timeoutMs: 120_000, intervalMs: 200 },
      );
      const from = monitor.lines.length;
      const killedAt = Date.now();
      await node.powerOff();
      const gone = await eventually(
        `${plan.name}: every route deleted at the router`,
        () => {
          const deleted = routeEvents(monitor.lines.slice(from)).filter(
            (e) => e.deleted && routes.includes(e.prefix),
          );
          const last = new Map(deleted.map((e) => [e.prefix, e.at]));
          return Promise.resolve(
            last.size === routes.length ? Math.max(...last.values()) : undefined,
          );
        },
        { timeoutMs: 300_000, intervalMs: 20 },
      );
      ms.push(gone - killedAt);
      say(`kill ${k + 1}/${KILLS} (${plan.name}): ${gone - killedAt} ms`);
      await node.reboot();
    }
    monitor.stop();
    const timers = BFD === 'on' ? `BFD ${INTERVAL} ms × 3` : 'no BFD, hold 9 s, graceful restart';
    console.log(
      table(
        `node death → every route of the node deleted at the router (${timers}), ${KILLS} kills`,
        [{ name: `BFD ${BFD}`, ms }],
        [],
      ),
    );
  } finally {
    await lab.down();
    await rm(dir, { recursive: true, force: true });
  }
}

main().catch((e: unknown) => {
  console.error(e);
  process.exit(1);
});
