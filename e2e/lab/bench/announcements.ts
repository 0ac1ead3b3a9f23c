#!/usr/bin/env node
// Lab benchmark (issue #12, parts 2 and 3), on a whole lab:
//   announcement: from the agent answering the runtime's CNI ADD (its "pod added" log line's
//     timestamp, the same clock) to the pod's pinned /128, or its own anycast /128, appearing
//     in the router's kernel table (`ip -ts monitor route` in the router namespace stamps every
//     change); anycast also from the pod's Ready (first seen by polling the API every 50 ms);
//   withdrawal after ungraceful loss: the node's kubelet is dead (no DEL will come), the pod is
//     deleted from the API (grace 0); from the DELETE returning to the /128 gone from the router.
//   node e2e/dist/lab/bench/announcements.js [--pods N] [--pace MS]
//     N pinned + N anycast pods (default 40), created MS apart (default 250; 0 = one burst, where
//     on 2 cores the figures are those of a queue: 80 sandboxes starting at once)
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as delay } from 'node:timers/promises';
import { z } from 'zod';
import { ANYCAST_ANNOTATION, PINNED_IP_ANNOTATION } from '@flock/api';
import { createLogger, objectPath, PODS } from '@flock/kube';
import { eventually } from '@flock/testkit';
import { Lab } from '../core/lab.js';
import { isPodReady, PodList } from '../core/pod-list.js';
import { workloadContainer } from '../core/plan.js';
import { routeEvents } from '../probes/route-events.js';

const NODES = 3;
const argPods = process.argv.indexOf('--pods');
const PER_KIND = argPods > 0 ? Number(process.argv[argPods + 1]) : 40;
if (!Number.isInteger(PER_KIND) || PER_KIND < 1 || PER_KIND > 200)
  throw new Error('--pods: 1..200 (the pinned and anycast ranges are /120s)');
const argPace = process.argv.indexOf('--pace');
const PACE_MS = argPace > 0 ? Number(process.argv[argPace + 1]) : 250;
if (!Number.isInteger(PACE_MS) || PACE_MS < 0 || PACE_MS > 10_000)
  throw new Error('--pace: 0..10000 ms');

function percentile(sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)]!;
}
const summary = (label: string, values: number[]) => {
  const s = [...values].sort((a, b) => a - b);
  return `${label.padEnd(44)} n=${String(s.length).padStart(3)}  p50 ${percentile(s, 50).toFixed(0).padStart(5)} ms  p99 ${percentile(s, 99).toFixed(0).padStart(5)} ms  max ${s.at(-1)!.toFixed(0).padStart(5)} ms`;
};

function barePod(name: string, node: string, annotations: Record<string, string>): object {
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name, namespace: 'default', labels: { app: 'bench' }, annotations },
    spec: {
      nodeName: node,
      terminationGracePeriodSeconds: 1,
      containers: [workloadContainer('w')],
    },
  };
}

/** When each bench pod was first seen Ready (polling the API). */
function stampReady(lab: Lab): { ready: Map<string, number>; stop(): void } {
  const ready = new Map<string, number>();
  let on = true;
  void (async () => {
    while (on) {
      // A failed poll (the API server busy under the burst) is only a missed sample.
      const raw = await lab
        .api!.request({
          method: 'GET',
          path: '/api/v1/namespaces/default/pods',
          query: { labelSelector: 'app=bench' },
        })
        .catch(() => undefined);
      const now = Date.now();
      for (const p of raw === undefined ? [] : PodList.parse(raw).items) {
        if (isPodReady(p) && !ready.has(p.metadata.name)) ready.set(p.metadata.name, now);
      }
      await delay(50);
    }
  })();
  return { ready, stop: () => (on = false) };
}

const AgentLine = z.looseObject({ message: z.string(), timestamp: z.string(), pod: z.string() });

/** When each node's agent answered ADD for each pod (its "pod added" log lines). */
async function addsAnswered(lab: Lab): Promise<Map<string, number>> {
  const at = new Map<string, number>();
  for (const node of lab.nodes) {
    const text = await readFile(join(node.dir, 'agent.log'), 'utf8');
    for (const line of text.split('\n')) {
      if (!line.includes('"pod added"')) continue;
      const parsed = AgentLine.safeParse(JSON.parse(line));
      if (parsed.success) at.set(parsed.data.pod.split('/')[1]!, Date.parse(parsed.data.timestamp));
    }
  }
  return at;
}

async function main(): Promise<void> {
  const dir = await mkdtemp(join(tmpdir(), 'flock-lab-bench-'));
  const lab = new Lab({ nodes: NODES, dir, log: createLogger('lab', 'error') });
  const say = (l: string) => console.error(`lab bench: ${l}`);
  try {
    await lab.up();
    const monitor = lab.router!.monitorRoutes(['-ts']);
    const pods: { name: string; node: string; prefix: string }[] = [];
    for (let i = 0; i < PER_KIND; i++) {
      const hex = (0x10 + i).toString(16);
      pods.push({
        name: `pinned-${i}`,
        node: lab.plans[i % NODES]!.name,
        prefix: `2001:db8:200::${hex}/128`,
      });
      pods.push({
        name: `anycast-${i}`,
        node: lab.plans[i % NODES]!.name,
        prefix: `2001:db8:300::${hex}/128`,
      });
    }
    say(`creating ${pods.length} pods on ${NODES} nodes`);
    // Watching for Ready from before the first pod: one made Ready during the creation loop
    // would otherwise be stamped late (a negative Ready → route).
    const stamps = stampReady(lab);
    for (const p of pods) {
      const ip = p.prefix.replace('/128', '');
      const annotations: Record<string, string> = p.name.startsWith('pinned')
        ? { [PINNED_IP_ANNOTATION]: ip }
        : { [ANYCAST_ANNOTATION]: ip };
      await lab.api!.request({
        method: 'POST',
        path: '/api/v1/namespaces/default/pods',
        body: barePod(p.name, p.node, annotations),
      });
      if (PACE_MS) await delay(PACE_MS);
    }
    let answered = new Map<string, number>();
    const added = (p: { name: string }) => answered.get(p.name);
    await eventually(
      'every bench pod announced',
      async () => {
        answered = await addsAnswered(lab);
        const events = routeEvents(monitor.lines);
        return pods.every(
          (p) => added(p) && events.some((e) => !e.deleted && e.prefix === p.prefix),
        );
      },
      { timeoutMs: 300_000, intervalMs: 500 },
    );
    const announce = {
      pinned: [] as number[],
      anycast: [] as number[],
      anycastReady: [] as number[],
    };
    const events = routeEvents(monitor.lines);
    for (const p of pods) {
      const at = events.find((e) => !e.deleted && e.prefix === p.prefix)!.at;
      announce[p.name.startsWith('pinned') ? 'pinned' : 'anycast'].push(at - added(p)!);
      const ready = stamps.ready.get(p.name);
      if (p.name.startsWith('anycast') && ready) announce.anycastReady.push(at - ready);
    }

    stamps.stop();
    say('killing the kubelets (no DEL from now on), deleting the pods one by one');
    for (const n of lab.nodes) await n.killKubelet();
    const withdraw: number[] = [];
    for (const p of pods.filter((x) => x.name.startsWith('pinned'))) {
      await lab.api!.request({
        method: 'DELETE',
        path: objectPath(PODS, p.name, 'default'),
        body: { gracePeriodSeconds: 0 },
      });
      const deletedAt = Date.now();
      const gone = await eventually(
        `${p.prefix} withdrawn`,
        () => routeEvents(monitor.lines).find((e) => e.deleted && e.prefix === p.prefix),
        { timeoutMs: 30_000, intervalMs: 20 },
      );
      withdraw.push(gone.at - deletedAt);
    }
    monitor.stop();
    console.log(
      `\nlab announcement and withdrawal (${NODES} nodes, pods ${PACE_MS} ms apart, ${new Date().toISOString()})`,
    );
    console.log(summary('ADD answered -> pinned /128 on the router', announce.pinned));
    console.log(summary('ADD answered -> anycast /128 on the router', announce.anycast));
    console.log(summary('  of which: pod Ready -> anycast on the router', announce.anycastReady));
    console.log(summary('pod deleted without DEL -> /128 withdrawn', withdraw));
  } finally {
    await lab.down();
    await rm(dir, { recursive: true, force: true });
  }
}

main().then(
  () => process.exit(0),
  (e: unknown) => {
    console.error(`lab bench: ${e instanceof Error ? e.message : String(e)}`);
    process.exit(1);
  },
);
