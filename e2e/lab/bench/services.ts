#!/usr/bin/env node
// Lab benchmark (issue #37): LoadBalancer Service addresses on 3 real nodes, timed at the router.
//   1. A LoadBalancer Service created (its POST returned) → its /128 in the router's kernel with
//      the expected next hops (externalTrafficPolicy Cluster: every node; Local: the nodes with
//      a ready endpoint, announced only once kube-proxy's health check there says 200), → the
//      first next hop of any node, and → the first HTTP answer from the router. N Services of each policy, alternated in one run
//      (ratio Local / Cluster), all for the sample Deployment `web` (a pod a node).
//   2. Local: an endpoint turns Ready again on a node that had none (the pod's readiness probe
//      passes again, setReady) → that node's next hop at the router; and the other way, not
//      Ready → gone. A Deployment of two pods on two of the nodes, their pods flipped in turn.
// Route changes are stamped by `ip -ts monitor route` in the router's namespace: the change
// that completed the expected next hops (the last one to the /128 before a 20 ms poll of the
// table found it complete). Each measurement starts 1.5 s after the last one ended, so that
// kube-proxy (minSyncPeriod 1 s) is idle: the figures are single changes, not a churn.
//   node e2e/dist/lab/bench/services.js [--services N] [--flips N]
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as delay } from 'node:timers/promises';
import { canonicalCidr } from '@flock/bird';
import { createLogger } from '@flock/kube';
import { eventually, table } from '@flock/testkit';
import { Lab } from '../core/lab.js';
import { labDeployment } from '../core/plan.js';
import type { LabPod } from '../core/pod-list.js';
import { lbService, routerHops, waitForIngress } from '../core/services.js';
import {
  applySamples,
  DEPLOYMENTS,
  SERVICES,
  setReady,
  waitForReadyPods,
} from '../core/workloads.js';
import { startReach } from '../probes/reach-watch.js';
import { routeEvents } from '../probes/route-events.js';
import {
  describeHistogram,
  histogramDelta,
  kubeProxyHistograms,
  kubeProxySyncPeriods,
  type Histogram,
} from './kube-proxy-metrics.js';
import { intOption } from './args.js';

const NODES = 3;
// The sample Pool's IPv6 Service range is a /120: 2 × 100 Services and the samples fit.
const PER_POLICY = intOption('--services', 20, 100);
const FLIPS = intOption('--flips', 20, 200);
const GAP_MS = 1_500;
const POLL_MS = 20;
const FLIP = 'bench-flip';
const KUBE_PROXY_HISTOGRAMS = [
  'kubeproxy_network_programming_duration_seconds',
  'kubeproxy_sync_proxy_rules_duration_seconds',
];

type Monitor = { lines: string[] };
const sameSet = (a: readonly string[], b: readonly string[]) =>
  JSON.stringify([...a].sort()) === JSON.stringify([...b].sort());
let pollStamps = 0; // route changes the monitor had no line for: stamped by the poll

/**
 * When the router's route to `ip` got exactly `want` as next hops: the table polled every 20 ms
 * until it has them, then the last change of the /128 that `ip -ts monitor route` saw since
 * `since` and no later than that poll (the poll's own time when it saw none).
 */
async function hopsAt(
  lab: Lab,
  monitor: Monitor,
  ip: string,
  want: readonly string[],
  since: number,
): Promise<number> {
  const polled = await eventually(
    `${ip} via ${want.join(', ')} at the router`,
    async () => (sameSet(await routerHops(lab, ip), want) ? Date.now() : undefined),
    { timeoutMs: 120_000, intervalMs: POLL_MS },
  );
  await delay(100); // the monitor's pipe may hold the line still
  const prefix = canonicalCidr(`${ip}/128`);
  const change = routeEvents(monitor.lines)
    .filter((e) => e.prefix === prefix && e.at >= since && e.at <= polled)
    .at(-1);
  if (!change) pollStamps++;
  return change?.at ?? polled;
}

interface Timing {
  assigned: number;
  /** Any node's next hop: the first change of the /128 at the router. */
  firstHop: number;
  routed: number;
  answered: number;
}

/** Part 1: one Service of the `web` pods created; its address, its route, its first answer. */
async function lbTiming(
  lab: Lab,
  monitor: Monitor,
  reach: ReturnType<typeof startReach>,
  name: string,
  local: boolean,
  want: readonly string[],
): Promise<Timing> {
  const posting = Date.now();
  await lab.api!.request({
    method: 'POST',
    path: '/api/v1/namespaces/default/services',
    body: lbService(name, 'web', { local, family: 'IPv6' }),
  });
  const created = Date.now();
  const [ip] = await waitForIngress(lab, name);
  const assigned = Date.now() - created;
  reach.add(ip!);
  const routed = (await hopsAt(lab, monitor, ip!, want, posting)) - created;
  const prefix = canonicalCidr(`${ip}/128`);
  const first = routeEvents(monitor.lines).find((e) => e.prefix === prefix && e.at >= posting);
  const firstHop = (first?.at ?? routed + created) - created;
  const answered = await eventually(`${ip} answers from the router`, () => reach.reached.get(ip!), {
    timeoutMs: 60_000,
    intervalMs: POLL_MS,
  });
  return { assigned, firstHop, routed, answered: answered - created };
}

const Slices = (raw: unknown) =>
  raw as {
    items: { endpoints?: { nodeName?: string; conditions?: { ready?: boolean } }[] }[];
  };

/** When the Service's EndpointSlices first say its endpoint on `node` is (not) ready (polled). */
function sliceSays(lab: Lab, service: string, node: string, ready: boolean): Promise<number> {
  return eventually(
    `${service}: the endpoint on ${node} ${ready ? 'ready' : 'not ready'}`,
    async () => {
      const list = Slices(
        await lab.api!.request({
          method: 'GET',
          path: '/apis/discovery.k8s.io/v1/namespaces/default/endpointslices',
          query: { labelSelector: `kubernetes.io/service-name=${service}` },
        }),
      );
      const e = list.items.flatMap((s) => s.endpoints ?? []).find((x) => x.nodeName === node);
      return (e?.conditions?.ready ?? false) === ready ? Date.now() : undefined;
    },
    { timeoutMs: 60_000, intervalMs: POLL_MS },
  );
}

/** A Deployment of two pods, one on each of `nodes` (toggleable readiness). */
function flipDeployment(nodes: string[]): object {
  return labDeployment({
    name: FLIP,
    replicas: nodes.length,
    toggleReady: true,
    podSpec: {
      affinity: {
        nodeAffinity: {
          requiredDuringSchedulingIgnoredDuringExecution: {
            nodeSelectorTerms: [
              {
                matchExpressions: [
                  { key: 'kubernetes.io/hostname', operator: 'In', values: nodes },
                ],
              },
            ],
          },
        },
        podAntiAffinity: {
          requiredDuringSchedulingIgnoredDuringExecution: [
            {
              topologyKey: 'kubernetes.io/hostname',
              labelSelector: { matchLabels: { app: FLIP } },
            },
          ],
        },
      },
    },
  });
}

interface FlipTimings {
  /** EndpointSlice says ready → the node's next hop at the router. */
  ready: number[];
  /** The readiness file removed (the exec returned) → the next hop: with the kubelet's probe. */
  fixed: number[];
  /** EndpointSlice says not ready → the node's next hop gone. */
  notReady: number[];
}

/** Part 2: a Local Service of two pods on two nodes; each flip takes one pod out and back. */
async function flipTimings(lab: Lab, monitor: Monitor, say: (l: string) => void) {
  const out: FlipTimings = { ready: [], fixed: [], notReady: [] };
  const hopOf = (p: LabPod) => lab.plans.find((n) => n.name === p.spec.nodeName)!.node6;
  await lab.apply(DEPLOYMENTS, flipDeployment(lab.plans.slice(0, 2).map((p) => p.name)));
  const pods = await waitForReadyPods(lab, 'default', `app=${FLIP}`, 2);
  await lab.apply(SERVICES, lbService(FLIP, FLIP, { local: true, family: 'IPv6' }));
  const [ip] = await waitForIngress(lab, FLIP);
  const both = pods.map(hopOf);
  await hopsAt(lab, monitor, ip!, both, 0);
  for (let k = 0; k < FLIPS; k++) {
    const pod = pods[k % pods.length]!;
    const node = pod.spec.nodeName!;
    const others = both.filter((h) => h !== hopOf(pod));
    let since = Date.now();
    const notReadyAt = sliceSays(lab, FLIP, node, false);
    await setReady(lab, pod, false);
    const unready = await notReadyAt;
    out.notReady.push((await hopsAt(lab, monitor, ip!, others, since)) - unready);
    await delay(GAP_MS);
    since = Date.now();
    const readyAt = sliceSays(lab, FLIP, node, true);
    await setReady(lab, pod, true);
    const fixed = Date.now();
    const ready = await readyAt;
    const back = await hopsAt(lab, monitor, ip!, both, since);
    out.ready.push(back - ready);
    out.fixed.push(back - fixed);
    say(
      `flip ${k + 1}/${FLIPS} (${node}): gone ${out.notReady.at(-1)} ms, back ${back - ready} ms`,
    );
    await delay(GAP_MS);
  }
  return out;
}

async function main(): Promise<void> {
  const dir = await mkdtemp(join(tmpdir(), 'flock-lab-bench-services-'));
  const lab = new Lab({ nodes: NODES, dir, log: createLogger('lab', 'error') });
  const say = (l: string) => console.error(`services bench: ${l}`);
  try {
    await lab.up();
    say('samples (web: a pod a node), waiting for them');
    await applySamples(lab, NODES);
    const web = await waitForReadyPods(lab, 'default', 'app=web', NODES);
    const everyNode = lab.plans.map((p) => p.node6);
    const withEndpoint = [
      ...new Set(web.map((p) => lab.plans.find((n) => n.name === p.spec.nodeName)!.node6)),
    ];
    const monitor = lab.router!.monitorRoutes(['-ts']);
    const reach = startReach(lab, 50, 250);
    const periods = await kubeProxySyncPeriods(lab);
    const readings: (Map<string, Histogram> | undefined)[] = [
      await kubeProxyHistograms(lab, KUBE_PROXY_HISTOGRAMS),
    ];
    const timings = { Cluster: [] as Timing[], Local: [] as Timing[] };
    for (let i = 0; i < PER_POLICY; i++) {
      for (const policy of i % 2
        ? (['Local', 'Cluster'] as const)
        : (['Cluster', 'Local'] as const)) {
        const name = `bench-${policy.toLowerCase()}-${i}`;
        const local = policy === 'Local';
        const t = await lbTiming(
          lab,
          monitor,
          reach,
          name,
          local,
          local ? withEndpoint : everyNode,
        );
        timings[policy].push(t);
        say(
          `${name}: assigned ${t.assigned}, first hop ${t.firstHop}, routed ${t.routed}, answers ${t.answered} ms`,
        );
        await delay(GAP_MS);
      }
    }
    readings.push(await kubeProxyHistograms(lab, KUBE_PROXY_HISTOGRAMS));
    const flips = await flipTimings(lab, monitor, say);
    readings.push(await kubeProxyHistograms(lab, KUBE_PROXY_HISTOGRAMS));
    monitor.stop();
    reach.stop();

    const rows = (k: keyof Timing) =>
      (['Cluster', 'Local'] as const).map((p) => ({ name: p, ms: timings[p].map((t) => t[k]) }));
    console.log(
      `\nLoadBalancer Services on the lab (${NODES} nodes; ${PER_POLICY} Services per policy, ` +
        `Local with endpoints on ${withEndpoint.length} nodes; ${FLIPS} readiness flips; ${new Date().toISOString()})`,
    );
    console.log(`kube-proxy: ${periods}`);
    console.log(
      table('Service created (POST returned) → address in its status', rows('assigned'), [
        'Cluster',
      ]),
    );
    console.log(
      table('Service created → a first next hop at the router', rows('firstHop'), ['Cluster']),
    );
    console.log(
      table(
        'Service created → the router has the /128 with the expected next hops',
        rows('routed'),
        ['Cluster'],
      ),
    );
    console.log(
      table('Service created → first HTTP answer from the router', rows('answered'), ['Cluster']),
    );
    console.log(
      table(
        'Local: an endpoint turns Ready on a node that had none → its next hop at the router',
        [
          { name: 'EndpointSlice ready → next hop', ms: flips.ready },
          { name: 'readiness fixed (exec returned) → next hop', ms: flips.fixed },
          { name: 'EndpointSlice not ready → next hop gone', ms: flips.notReady },
        ],
        [],
      ),
    );
    for (const name of KUBE_PROXY_HISTOGRAMS) {
      const [r0, r1, r2] = readings.map((r) => r?.get(name));
      const part = (a?: Histogram, b?: Histogram) =>
        a && b ? describeHistogram(histogramDelta(a, b)) : 'unavailable';
      console.log(`\n${name} (3 nodes): part 1 ${part(r0, r1)}; part 2 ${part(r1, r2)}`);
    }
    console.log(`route changes stamped by the 20 ms poll (no monitor line): ${pollStamps}`);
  } finally {
    await lab.down();
    await rm(dir, { recursive: true, force: true });
  }
}

main().then(
  () => process.exit(0),
  (e: unknown) => {
    console.error(e);
    process.exit(1);
  },
);
