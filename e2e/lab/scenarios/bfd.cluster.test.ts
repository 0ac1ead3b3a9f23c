// BFD and graceful restart on the chart's install (issue #21): every node session at the router
// is tied to a BFD session with the node's BFD speaker (the bfd DaemonSet); the agent's BIRD or
// the agent itself crashing deletes no route at the router (BFD stays Up, the router bridges
// BGP as a graceful-restart helper, BIRD comes back with -R); a node that dies is withdrawn
// within a second, so a pinned address whose pod moves never has two paths at the router, and
// the router forwards to the new node as soon as its pod is Ready. (A rolling upgrade under the
// same watch: helm.cluster.test.ts.)
import { setTimeout as delay } from 'node:timers/promises';
import { eventually } from '@flock/testkit';
import { describe, expect, it } from 'vitest';
import { FLOCK_NAMESPACE } from '../core/helm.js';
import { FLOCK_ARGV, containerProcesses } from '../node/processes.js';
import { isPodReady } from '../core/pod-list.js';
import { SAMPLE_PINNED6, samplePinned } from '../core/plan.js';
import { routeEvents } from '../probes/route-events.js';
import { startLab } from '../core/test-lab.js';
import { DEPLOYMENTS, listPods, waitForPods } from '../core/workloads.js';

const { lab } = startLab({
  tmpPrefix: 'flock-lab-bfd-',
  tools: ['bird', 'nsenter', 'flock-controlplane', 'kubectl', 'helm'],
  nodes: 2,
  install: 'helm',
});

/** The router's routes through one node (prefixes). */
async function routesVia(node6: string): Promise<string[]> {
  return (await lab.router!.routes()).filter((r) => r.via.includes(node6)).map((r) => r.prefix);
}

/** The routes whose one next hop is the node: they go with it (multipath ones lose a hop). */
async function routesOnlyVia(node6: string): Promise<string[]> {
  return (await lab.router!.routes())
    .filter((r) => r.via.length === 1 && r.via[0] === node6)
    .map((r) => r.prefix);
}

/** Kill a container's main process (SIGKILL); the kubelet starts the container again. */
async function crash(nodeIndex: number, match: (argv: string[]) => boolean): Promise<number> {
  const [proc] = await containerProcesses(lab.nodes[nodeIndex]!, match);
  if (!proc) throw new Error('no such container process');
  process.kill(proc.pid, 'SIGKILL');
  return proc.pid;
}

describe('BFD on the helm-installed lab', () => {
  it('every node session is tied to a BFD session Up with the node speaker (one bfd pod a node)', async () => {
    const speakers = await eventually(
      'a Ready BFD speaker on every node',
      async () => {
        const pods = (await listPods(lab, FLOCK_NAMESPACE, 'app.kubernetes.io/name=flock-bfd'))
          .filter(isPodReady)
          .map((p) => p.spec.nodeName);
        return pods.length === lab.plans.length ? pods : undefined;
      },
      { timeoutMs: 120_000, intervalMs: 1_000 },
    );
    expect(new Set(speakers)).toEqual(new Set(lab.plans.map((p) => p.name)));
    for (const plan of lab.plans)
      await eventually(`BFD Up with ${plan.name}`, async () => {
        return (await lab.router!.bfdState(plan.node6)) === 'Up';
      });
  });

  for (const [what, match] of [
    ["the agent pod's BIRD", FLOCK_ARGV.bgpBird],
    ['the agent', FLOCK_ARGV.agent],
  ] as const) {
    it(`${what} crashes and is restarted: no route of the node deleted at the router, BFD Up throughout`, async () => {
      const plan = lab.plans[0]!;
      const before = await routesVia(plan.node6);
      expect(before.length).toBeGreaterThanOrEqual(2);
      const monitor = lab.router!.monitorRoutes();
      const bfd: (string | undefined)[] = [];
      try {
        const old = await crash(0, match);
        await eventually(
          `${what} running again`,
          async () => {
            const [now] = await containerProcesses(lab.nodes[0]!, match);
            return now !== undefined && now.pid !== old;
          },
          { timeoutMs: 120_000, intervalMs: 500 },
        );
        // The new BIRD recovers (End-of-RIB both ways); an agent restart re-renders the same.
        await eventually(
          'the session Established, graceful restart over, every route there',
          async () => {
            bfd.push(await lab.router!.bfdState(plan.node6));
            if (!(await lab.router!.recovered(plan.routerIf))) return false;
            return JSON.stringify(await routesVia(plan.node6)) === JSON.stringify(before);
          },
          { timeoutMs: 120_000, intervalMs: 500 },
        );
        await delay(2_000);
      } finally {
        monitor.stop();
      }
      const deleted = monitor.lines.filter(
        (l) => l.startsWith('Deleted') && l.includes(plan.node6),
      );
      expect(deleted).toEqual([]);
      expect(bfd.filter((s) => s !== 'Up')).toEqual([]);
    });
  }

  it('a node dies with a pinned pod: its routes are gone within the BFD detection time, the replacement is forwarded to within 1 s of Ready, never two paths', async () => {
    const pinned = `${SAMPLE_PINNED6}/128`;
    await lab.apply(DEPLOYMENTS, samplePinned(5));
    const [old] = await waitForPods(lab, 'default', 'app=pinned', 1);
    const a = lab.plans.find((p) => p.name === old!.spec.nodeName)!;
    const b = lab.plans.find((p) => p !== a)!;
    await eventually('the router forwards the pinned address to A', async () => {
      return JSON.stringify(await lab.router!.nextHops(pinned)) === JSON.stringify([a.node6]);
    });
    const aRoutes = await routesOnlyVia(a.node6);
    const monitor = lab.router!.monitorRoutes(['-ts']);
    // Every 50 ms: the pinned address's next hops, and the first moment the new pod is Ready.
    const hops: string[][] = [];
    let readyAt: number | undefined;
    let forwardedToB: number | undefined;
    let aGone: number | undefined;
    const killedAt = Date.now();
    try {
      await lab.killNode(a.name);
      await eventually(
        'the replacement Ready on B and the router forwarding to it',
        async () => {
          const now = Date.now();
          const via = await lab.router!.nextHops(pinned);
          hops.push(via);
          if (aGone === undefined && (await routesVia(a.node6)).length === 0) aGone = now;
          if (forwardedToB === undefined && JSON.stringify(via) === JSON.stringify([b.node6]))
            forwardedToB = now;
          if (readyAt === undefined) {
            const fresh = (await listPods(lab, 'default', 'app=pinned')).find(
              (p) => p.metadata.name !== old!.metadata.name && p.spec.nodeName === b.name,
            );
            if (fresh && isPodReady(fresh)) readyAt = Date.now();
          }
          return readyAt !== undefined && forwardedToB !== undefined;
        },
        { timeoutMs: 180_000, intervalMs: 50 },
      );
    } finally {
      monitor.stop();
    }
    // When the router deleted A's last route, by its own clock (ip -ts monitor).
    const deletedAt = routeEvents(monitor.lines)
      .filter((e) => e.deleted && e.via === a.node6 && aRoutes.includes(e.prefix))
      .map((e) => e.at);
    const withdrawnMs = Math.max(...deletedAt) - killedAt;
    console.log(
      `node death -> A's ${aRoutes.length} routes deleted at the router after ${withdrawnMs} ms; ` +
        `replacement Ready -> router forwards to B: ${forwardedToB! - readyAt!} ms (negative: announced before Ready)`,
    );
    expect(deletedAt.length).toBeGreaterThanOrEqual(aRoutes.length);
    // The sample Pool's BFD: 300 ms × 3, detection within 0.9 s of the last packet.
    expect(withdrawnMs).toBeLessThan(1_500);
    expect(aGone).toBeDefined();
    expect(forwardedToB! - readyAt!).toBeLessThan(1_000);
    // Never both nodes at once: no sample, and no route the router wrote, with two next hops.
    expect(hops.filter((h) => h.length > 1)).toEqual([]);
    const pinnedLines = monitor.lines.filter((l) => l.includes(SAMPLE_PINNED6));
    expect(pinnedLines.filter((l) => (l.match(/nexthop/g) ?? []).length > 1)).toEqual([]);
  });
});
