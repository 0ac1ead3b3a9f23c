// What one Service change costs the agent at 100 and 1,000 LoadBalancer Services, side by side
// in one run (ratios to the first size): the plan (planAnnouncements for the node's pods +
// claimedServiceAddresses, planServiceAddresses + toBirdModel + the announcer's comparison key), the render
// (renderBirdConfig, with validation), and the reload (applyBirdConfig: the atomic write and
// `configure` on the control socket, answered when BIRD has taken the new config) of a real
// BIRD, the agent's own code and clients. A change: a Local Service's endpoint here goes not
// ready or ready, or a new Service; each moves two addresses (one IPv6, one IPv4). The node's
// BIRD runs in a namespace of its own and peers with a test router (@flock/bird/testing), so the
// reload is one of a BIRD with an Established session; after each change the bench waits for
// the router to have it (not timed) before the next one. The goal: ≤ 100 ms a change at
// 1,000 Services. Root and bird2 (network namespaces); figures, not assertions on time:
//   ./dev npm run bench:services -w @flock/agent      (BENCH_SERVICES=100,1000 BENCH_CHANGES=60)
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { cpus, loadavg, release, tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import type { AddressClaim } from '@flock/api';
import {
  announcedPrefixes,
  applyBirdConfig,
  canonicalCidr,
  renderBirdConfig,
  type BirdControl,
  type BirdModel,
} from '@flock/bird';
import { TestRouter, nodeBirdPaths, startNodeBird, type BirdProcess } from '@flock/bird/testing';
import { Netns, requireKernelTier, summarize } from '@flock/testkit';
import { planAnnouncements, toBirdModel } from '../../src/routing/announcements.js';
import {
  claimedServiceAddresses,
  planServiceAddresses,
} from '../../src/routing/service-addresses.js';
import { birdControls } from '../../src/routing/wiring.js';
import { claimsFor } from '../../testing/routing-fixtures.js';
import { BENCH_SPEC, benchNode } from './fixtures.js';
import { SERVICE_CIDRS, ServiceSet, type Change } from './service-set.js';

const SIZES = (process.env['BENCH_SERVICES'] ?? '100,1000').split(',').map(Number);
const CHANGES = Number(process.env['BENCH_CHANGES'] ?? 60);
const WARMUP = 6;
const PODS = 110; // kubelet's default maximum
const ROUTER_AS = 65000;
const ROUTER_ID = '10.0.0.1';
const spec = {
  ...BENCH_SPEC,
  serviceCIDRs: SERVICE_CIDRS,
  clusterIPCIDRs: ['fd00:10:96::/112', '10.96.0.0/16'],
};
const pods = benchNode(PODS);
const podClaims = claimsFor(pods.entries, { pinnedCIDRs: spec.pinnedCIDRs ?? [] });

type Phase = 'plan' | 'render' | 'reload' | 'total';
const PHASES: Phase[] = ['plan', 'render', 'reload', 'total'];

interface Row {
  services: number;
  bytes: number;
  ms: Record<Phase, number[]>;
  byKind: Map<Change['kind'], number[]>;
}

/** What the agent's routing pass and announcer compute before a reload (routing.ts, announcer.ts). */
function planModel(set: ServiceSet, router6: string): BirdModel {
  const claimOf = (address: string): AddressClaim | undefined =>
    set.claimOf(address) ?? podClaims(address);
  const plan = planAnnouncements({ spec, ...pods, claimOf });
  const { claimed, warnings } = claimedServiceAddresses({
    spec,
    services: set.services.values(),
    claimOf,
  });
  const services = planServiceAddresses({ claimed, readyHere: set.readyHere });
  const model = toBirdModel({
    plan: { ...plan, services, warnings: [...plan.warnings, ...warnings] },
    spec,
    routerId: ROUTER_ID,
    peers: [{ address: router6, asn: ROUTER_AS }],
  });
  JSON.stringify(model); // the announcer's key: an unchanged model is not reloaded
  return model;
}

const hostPrefix = (ip: string) => canonicalCidr(`${ip}/${ip.includes(':') ? 128 : 32}`);

/** Wait until the router's kernel agrees with `holds`; throw if it does not within 30 s. */
async function routerHas(
  router: TestRouter,
  what: string,
  holds: (learned: Set<string>) => boolean,
): Promise<void> {
  const last = await router.waitFor((l) => holds(new Set(l)));
  if (!holds(new Set(last)))
    throw new Error(`the router did not get ${what} (it has ${last.length} prefixes)`);
}

async function measure(
  size: number,
  router: TestRouter,
  configPath: string,
  control: BirdControl,
): Promise<Row> {
  const set = new ServiceSet(size);
  const initial = renderBirdConfig(planModel(set, router.router6));
  const first = await applyBirdConfig({ configPath, text: initial, control });
  if (first.status !== 'applied') throw first.error;
  const want = announcedPrefixes(planModel(set, router.router6));
  const all = [...want[6], ...want[4]].map((p) => canonicalCidr(p));
  // Exactly these: no withdrawal of the previous size still on its way.
  await routerHas(
    router,
    `exactly the ${all.length} prefixes`,
    (l) => l.size === all.length && all.every((p) => l.has(p)),
  );
  let accepted = initial;
  const row: Row = {
    services: size,
    bytes: initial.length,
    ms: { plan: [], render: [], reload: [], total: [] },
    byKind: new Map(),
  };
  for (let k = 0; k < WARMUP + CHANGES; k++) {
    const change = set.change(k);
    const t0 = performance.now();
    const model = planModel(set, router.router6);
    const t1 = performance.now();
    const text = renderBirdConfig(model);
    const t2 = performance.now();
    const outcome = await applyBirdConfig({ configPath, text, control, restore: accepted });
    const t3 = performance.now();
    if (outcome.status !== 'applied') throw outcome.error;
    accepted = text;
    const moved = change.addresses.map(hostPrefix);
    await routerHas(router, `${change.kind} (${moved.join(', ')})`, (l) =>
      moved.every((p) => l.has(p) === change.announced),
    );
    if (k < WARMUP) continue;
    row.ms.plan.push(t1 - t0);
    row.ms.render.push(t2 - t1);
    row.ms.reload.push(t3 - t2);
    row.ms.total.push(t3 - t0);
    row.byKind.set(change.kind, [...(row.byKind.get(change.kind) ?? []), t3 - t0]);
  }
  return row;
}

function report(rows: Row[]): void {
  const f = (n: number) => n.toFixed(1);
  const base = rows[0]!;
  console.log(
    `\n# agent: one Service change (plan + render + BIRD reload) — ${new Date().toISOString()}`,
  );
  console.log(
    `node ${process.version}, Linux ${release()}, ${cpus().length} × ${cpus()[0]?.model ?? '?'}, ` +
      `load ${loadavg()
        .map((l) => l.toFixed(1))
        .join(' ')}; ${PODS} pods on the node, ` +
      `${CHANGES} changes a size after ${WARMUP} not counted\n`,
  );
  const head = PHASES.map((p) => ` ${p} p50 | ${p} p99 |`).join('');
  console.log(`| Services | config KiB |${head} total max | total p50 / ${base.services} |`);
  console.log(`| ---: | ---: |${PHASES.map(() => ' ---: | ---: |').join('')} ---: | ---: |`);
  for (const r of rows) {
    const cells = PHASES.map((p) => {
      const s = summarize(r.ms[p]);
      return ` ${f(s.p50)} | ${f(s.p99)} |`;
    }).join('');
    const total = summarize(r.ms.total);
    const ratio = total.p50 / summarize(base.ms.total).p50;
    console.log(
      `| ${r.services.toLocaleString('en')} | ${(r.bytes / 1024).toFixed(0)} |${cells} ${f(total.max)} | ×${ratio.toFixed(2)} |`,
    );
  }
  console.log('\ntotal p50 / p99 ms by kind of change:');
  for (const r of rows) {
    const kinds = [...r.byKind].map(([kind, ms]) => {
      const s = summarize(ms);
      return `${kind} ${f(s.p50)} / ${f(s.p99)} (n ${s.n})`;
    });
    console.log(`  ${r.services.toLocaleString('en')} Services: ${kinds.join('; ')}`);
  }
}

async function main(): Promise<void> {
  try {
    requireKernelTier('bird');
  } catch (e) {
    throw new Error(
      `the Service change bench runs a real BIRD in network namespaces of its own: ${(e as Error).message}`,
    );
  }
  // Interrupted: exit normally, so that the namespaces (and BIRD in them) are removed.
  for (const signal of ['SIGINT', 'SIGTERM'] as const)
    process.once(signal, () => process.exit(130));
  const dir = await mkdtemp(join(tmpdir(), 'flock-svcbench-'));
  let node: Netns | undefined;
  let router: TestRouter | undefined;
  let bird: BirdProcess | undefined;
  try {
    node = await Netns.create('svcbench');
    router = await TestRouter.create({ node, dir, routerAs: ROUTER_AS, nodeAs: spec.bgp.asn });
    await router.startBird();
    const paths = nodeBirdPaths(dir);
    await writeFile(
      paths.configPath,
      renderBirdConfig(planModel(new ServiceSet(0), router.router6)),
    );
    bird = await startNodeBird(node, paths);
    const control = birdControls(paths.socketPath).reload;
    const rows: Row[] = [];
    for (const size of SIZES) rows.push(await measure(size, router, paths.configPath, control));
    report(rows);
  } finally {
    await bird?.stop();
    await router?.destroy();
    await node?.destroy();
    await rm(dir, { recursive: true, force: true });
  }
}

main().catch((e: unknown) => {
  console.error(e);
  process.exitCode = 1;
});
