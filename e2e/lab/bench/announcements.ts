#!/usr/bin/env node
// Lab benchmark (issue #12, parts 2 and 3), on a whole lab:
//   announcement: from CNI ADD returning (the kubelet stand-in's clock) to the pod's pinned
//     /128, or its own anycast /128, appearing in the router's kernel table (`ip -ts monitor
//     route` in the router namespace stamps every change);
//   withdrawal after ungraceful loss: the node's kubelet is dead (no DEL will come), the pod is
//     deleted from the API (grace 0); from the DELETE returning to the /128 gone from the router.
//   node e2e/dist/lab/bench/announcements.js [--pods N]      (N pinned + N anycast pods; default 40)
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ANYCAST_ANNOTATION, PINNED_IP_ANNOTATION } from '@flock/api';
import { createLogger, objectPath, PODS } from '@flock/kube';
import { eventually } from '@flock/testkit';
import { Lab } from '../lab.js';

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
      containers: [{ name: 'w', image: 'flock.lab/workload:1', ports: [{ containerPort: 8080 }] }],
    },
  };
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
    const added = (p: { name: string; node: string }) =>
      lab.node(p.node).kubelet.addReturnedAt.get(`default/${p.name}`);
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
      const ready = lab.node(p.node).kubelet.readyAt.get(`default/${p.name}`);
      if (p.name.startsWith('anycast') && ready) announce.anycastReady.push(at - ready);
    }

    say('killing the kubelets (no DEL from now on), deleting the pods one by one');
    for (const k of lab.kubelets) await k.kill();
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
    console.log(summary('ADD returned -> pinned /128 on the router', announce.pinned));
    console.log(summary('ADD returned -> anycast /128 on the router', announce.anycast));
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
