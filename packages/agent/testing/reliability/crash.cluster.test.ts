// Crash consistency, for real: the agent process against a real API server, pods wired by
// the real CNI plugin (cnitool) in real namespaces, SIGKILLed at a random named fault point
// of an ADD or DEL in every run, restarted, and held to the invariants after every restart
// (and the store's after every crash). Seeded: the seed is printed, FLOCK_CRASH_SEED replays.
// FLOCK_CRASH_RUNS sets the number of runs; FLOCK_SOAK=1 (npm run test:soak) makes it 200.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { grantTo, nodeConfig } from '@flock/api/testing';
import { NODECONFIGS, type HttpTransport } from '@flock/kube';
import { Netns, requireKernelTier, type ControlPlane } from '@flock/testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { hostVethName } from '../../src/datapath/index.js';
import { TestNode } from '../node-harness.js';
import { createTestPod, startTestCluster } from '../test-cluster.js';
import { nextRun, seededRandom } from '../crash-plan.js';
import {
  kernelViolations,
  loadStore,
  policyAndBirdViolations,
  storeViolations,
  type CrashSlot,
  type InvariantInput,
} from '../crash-invariants.js';

// Released addresses stay quarantined across restarts (in the store): short, so that the
// slots' addresses come back between runs instead of exhausting the node's IPv4 /28.
const QUARANTINE = ['--address-quarantine', '1s'];

const RUNS = Number(process.env['FLOCK_CRASH_RUNS'] ?? (process.env['FLOCK_SOAK'] ? 200 : 40));
const SEED = Number(process.env['FLOCK_CRASH_SEED'] ?? Math.floor(Math.random() * 2 ** 32));
const CIDR6 = '2001:db8:100::/64';
const CIDR4 = '192.0.2.16/28';
/** How long the policy table and bird.conf may take to follow the store after a restart. */
const CONVERGE_MS = 10_000;

let cp: ControlPlane;
let api: HttpTransport;
let node: TestNode;
let nodeNs: Netns;
let dir: string;
const slots: CrashSlot[] = [];

async function createSlot(name: string, annotations: Record<string, string>) {
  const uid = await createTestPod(api, { name, nodeName: 'node-a', annotations });
  const ns = await Netns.create('crash');
  const containerID = await TestNode.cnitoolContainerId(ns.path);
  const slot: CrashSlot & { uid: string } = {
    name,
    ns,
    containerID,
    veth: hostVethName(containerID, 'eth0'),
    uid: uid,
    ...(annotations['flock.fritzlab.net/pinned-ip']
      ? { pinned: annotations['flock.fritzlab.net/pinned-ip'] }
      : {}),
    ...(annotations['flock.fritzlab.net/anycast']
      ? { anycast: annotations['flock.fritzlab.net/anycast'] }
      : {}),
  };
  slots.push(slot);
}

const input = (): InvariantInput => ({
  node: nodeNs,
  slots,
  storePath: node.storePath,
  birdConfigPath: node.birdConfigPath,
  aggregates: [CIDR6, CIDR4],
});

/** Every invariant; after a start-up also the kernel, the policy table and bird.conf. */
async function check(afterStart: boolean): Promise<{ violations: string[]; convergeMs: number }> {
  let entries;
  try {
    entries = await loadStore(node.storePath);
  } catch (error) {
    return { violations: [`the store does not load: ${(error as Error).message}`], convergeMs: 0 };
  }
  const violations = storeViolations(entries, afterStart);
  if (!afterStart) return { violations, convergeMs: 0 };
  const committed = entries.filter((e) => e.state === 'committed');
  violations.push(...(await kernelViolations(input(), committed)));
  // The policy pass and the BIRD render follow start-up asynchronously: give them CONVERGE_MS.
  const started = Date.now();
  let last: string[] = [];
  for (;;) {
    last = await policyAndBirdViolations(input(), committed);
    if (!last.length || Date.now() - started > CONVERGE_MS) break;
    await new Promise((r) => setTimeout(r, 100));
  }
  return { violations: [...violations, ...last], convergeMs: Date.now() - started };
}

beforeAll(async () => {
  requireKernelTier('cnitool', 'nsenter', 'nft');
  let apply;
  ({ cp, api, apply } = await startTestCluster('node-a'));
  await apply(
    NODECONFIGS,
    nodeConfig({
      ipAlgo: 'sequential',
      spec: {
        cidr6: CIDR6,
        cidr4: CIDR4,
        pinnedCIDRs: ['2001:db8:200::/64'],
        anycastCIDRs: ['2001:db8:300::/120'],
        pinnedGrants: [grantTo('default')],
        anycastGrants: [grantTo('default')],
      },
    }),
  );
  nodeNs = await Netns.create('cnode');
  dir = await mkdtemp(join(tmpdir(), 'flock-crash-'));
  node = new TestNode({ cp, nodeName: 'node-a', netns: nodeNs, dir });
  await node.installPlugin();
  for (let i = 0; i < 3; i++) await createSlot(`plain-${i}`, {});
  for (let i = 1; i <= 2; i++)
    await createSlot(`pinned-${i}`, { 'flock.fritzlab.net/pinned-ip': `2001:db8:200::${i}` });
  await createSlot('anycast', { 'flock.fritzlab.net/anycast': '2001:db8:300::1' });
}, 300_000);

afterAll(async () => {
  await node?.agent?.kill();
  for (const s of slots) await s.ns.destroy();
  await nodeNs?.destroy();
  await cp?.stop();
  if (dir) await rm(dir, { recursive: true, force: true });
});

describe('crash consistency: SIGKILL at random fault points of ADD and DEL', () => {
  it(
    `${RUNS} runs keep every invariant after every restart`,
    async () => {
      process.stdout.write(
        `crash suite: seed ${SEED}, ${RUNS} runs (replay: FLOCK_CRASH_SEED=${SEED} FLOCK_CRASH_RUNS=${RUNS})\n`,
      );
      const random = seededRandom(SEED);
      const failures: string[] = [];
      const crashed = new Map<string, number>();
      let notReached = 0;
      let maxConvergeMs = 0;
      const began = Date.now();
      let previous = 'the first start';
      for (let run = 1; run <= RUNS; run++) {
        const committed = new Set(
          (await loadStore(node.storePath))
            .filter((e) => e.state === 'committed')
            .map((e) => e.containerID),
        );
        const plan = nextRun(
          random,
          slots.map((s) => ({ attached: committed.has(s.containerID), anycast: !!s.anycast })),
        );
        const slot = slots[plan.slot] as CrashSlot & { uid: string };
        const what = `run ${run} (${plan.prepare ? `${plan.prepare} then ` : ''}${plan.command} ${slot.name} at ${plan.fault})`;
        const agent = await node.startAgent(['--test-faults', plan.fault, ...QUARANTINE]);
        const afterStart = await check(true);
        maxConvergeMs = Math.max(maxConvergeMs, afterStart.convergeMs);
        failures.push(...afterStart.violations.map((v) => `restart after ${previous}: ${v}`));
        previous = what;

        const who = { namespace: 'default', name: slot.name, uid: slot.uid };
        if (plan.prepare)
          await node
            .cnitool(plan.prepare, slot.ns.path, who)
            .catch((e: Error) => failures.push(`${what}: the prepare step failed: ${e.message}`));
        const ok = await node.cnitool(plan.command, slot.ns.path, who).then(
          () => true,
          () => false,
        );
        const exit = await Promise.race([
          agent.exited,
          new Promise((r) => setTimeout(() => r('alive'), ok ? 500 : 10_000)),
        ]);
        const reached = agent.logs.some((l) => l.includes('fault point reached'));
        if (exit === 'SIGKILL' && reached && !ok) {
          crashed.set(plan.fault, (crashed.get(plan.fault) ?? 0) + 1);
        } else if (exit === 'alive' && ok && !reached) {
          notReached++; // e.g. DEL of a pod without an allocation: killed while idle instead
          await agent.kill();
        } else {
          failures.push(
            `${what}: command ok=${ok}, agent ${String(exit)}, point reached=${reached}`,
          );
          await agent.kill();
        }
        const afterCrash = await check(false);
        failures.push(...afterCrash.violations.map((v) => `${what}, after the crash: ${v}`));
      }

      // A clean start, then every pod deleted: nothing of flock may remain.
      await node.startAgent(QUARANTINE);
      const last = await check(true);
      failures.push(...last.violations.map((v) => `restart after ${previous}: ${v}`));
      for (const s of slots as (CrashSlot & { uid: string })[])
        await node.cnitool('del', s.ns.path, { namespace: 'default', name: s.name, uid: s.uid });
      expect(await loadStore(node.storePath)).toEqual([]);
      const empty = await check(true);
      failures.push(...empty.violations.map((v) => `after deleting every pod: ${v}`));
      await node.agent!.stop();

      const summary = {
        seed: SEED,
        runs: RUNS,
        crashes: [...crashed.values()].reduce((a, b) => a + b, 0),
        notReached,
        points: Object.fromEntries([...crashed].sort()),
        maxConvergeMs,
        seconds: Math.round((Date.now() - began) / 1000),
        violations: failures.length,
      };
      process.stdout.write(`crash suite summary: ${JSON.stringify(summary)}\n`);
      expect(failures).toEqual([]);
      // Most runs must really crash at their point, or the suite tests nothing.
      expect(summary.crashes).toBeGreaterThanOrEqual(Math.floor(RUNS * 0.6));
    },
    RUNS * 20_000 + 120_000,
  );
});
