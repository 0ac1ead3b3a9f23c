#!/usr/bin/env node
// Lab benchmark (issue #12, parts 2 and 3), on a whole lab:
//   announcement: from the kubelet reporting the pod's addresses (the first status with podIPs,
//     seen by polling the API every 50 ms: CNI ADD has returned by then) to the pod's pinned
//     /128, or its own anycast /128, appearing in the router's kernel table (`ip -ts monitor
//     route` in the router namespace stamps every change); anycast also from the pod's Ready;
//   withdrawal after ungraceful loss: the node's kubelet is dead (no DEL will come), the pod is
//     deleted from the API (grace 0); from the DELETE returning to the /128 gone from the router.
//   node e2e/dist/lab/bench/announcements.js [--pods N]      (N pinned + N anycast pods; default 40)
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as delay } from 'node:timers/promises';
import { z } from 'zod';
import { ANYCAST_ANNOTATION, PINNED_IP_ANNOTATION } from '@flock/api';
import { createLogger, objectPath, PODS } from '@flock/kube';
import { eventually } from '@flock/testkit';
import { Lab } from '../lab.js';
import { workloadContainer } from '../plan.js';

const NODES = 3;
const argPods = process.argv.indexOf('--pods');
const PER_KIND = argPods > 0 ? Number(process.argv[argPods + 1]) : 40;
if (!Number.isInteger(PER_KIND) || PER_KIND < 1 || PER_KIND > 200)
  throw new Error('--pods: 1..200 (the pinned and anycast ranges are /120s)');

interface RouteEvent {
  at: number;
  deleted: boolean;
  prefix: string;
}

/** `ip -ts monitor route` lines: "[2026-11-29T22:35:15.460772] [Deleted ]PREFIX ...". */
function parseEvents(lines: readonly string[]): RouteEvent[] {
  return lines.flatMap((line) => {
    const m = /^\[([0-9T:.-]+)\] (Deleted )?(\S+)/.exec(line);
    if (!m) return [];
    const prefix = m[3]!.includes('/') ? m[3]! : `${m[3]}/128`;
    return [{ at: Date.parse(m[1]!), deleted: m[2] !== undefined, prefix }];
  });
}

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

const PodList = z.object({
  items: z.array(
    z.looseObject({
      metadata: z.looseObject({ name: z.string() }),
      status: z
        .looseObject({
          podIPs: z.array(z.object({ ip: z.string() })).optional(),
          conditions: z.array(z.looseObject({ type: z.string(), status: z.string() })).optional(),
        })
        .optional(),
    }),
  ),
});

/** When each bench pod was first seen with addresses, and Ready (polling the API). */
function stampPods(lab: Lab): {
  addressed: Map<string, number>;
  ready: Map<string, number>;
  stop(): void;
} {
  const addressed = new Map<string, number>();
  const ready = new Map<string, number>();
  let on = true;
  void (async () => {
    while (on) {
      const raw = await lab.api!.request({
        method: 'GET',
        path: '/api/v1/namespaces/default/pods',
        query: { labelSelector: 'app=bench' },
      });
      const now = Date.now();
      for (const p of PodList.parse(raw).items) {
        const name = p.metadata.name;
        if ((p.status?.podIPs ?? []).length && !addressed.has(name)) addressed.set(name, now);
        const isReady = p.status?.conditions?.some(
          (c) => c.type === 'Ready' && c.status === 'True',
        );
        if (isReady && !ready.has(name)) ready.set(name, now);
      }
      await delay(50);
    }
  })();
  return { addressed, ready, stop: () => (on = false) };
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
    }
    const stamps = stampPods(lab);
    const added = (p: { name: string }) => stamps.addressed.get(p.name);
    await eventually(
      'every bench pod announced',
      () => {
        const events = parseEvents(monitor.lines);
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
    const events = parseEvents(monitor.lines);
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
        () => parseEvents(monitor.lines).find((e) => e.deleted && e.prefix === p.prefix),
        { timeoutMs: 30_000, intervalMs: 20 },
      );
      withdraw.push(gone.at - deletedAt);
    }
    monitor.stop();
    console.log(`\nlab announcement and withdrawal (${NODES} nodes, ${new Date().toISOString()})`);
    console.log(summary('pod addresses reported -> pinned /128 on router', announce.pinned));
    console.log(summary('pod addresses reported -> anycast /128 on router', announce.anycast));
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
