// Private IPv4 on real nodes (docs/install.md, "IPv4 modes"): the lab's Pool switched to
// ipv4.mode: Private. The router stops learning the nodes' IPv4 slices and learns their parts of
// the translation prefix instead; a pod reaches the router's IPv4 address from its node's address
// (SNAT), a pod of its node and one of another node with its own address (between nodes
// translated to IPv6 and back, nothing private reaches the router), and NetworkPolicy on IPv4
// peers still judges the real pod, on either node.
import { nat64Address, translatedRange } from '@flock/agent';
import { NodeConfig, cidrContainsIp } from '@flock/api';
import { NETWORK_POLICIES, NODECONFIGS, PODS, POOLS, objectPath } from '@flock/kube';
import { run } from '@flock/exec';
import { eventually } from '@flock/testkit';
import { describe, expect, it } from 'vitest';
import {
  POOL_CIDR4,
  ROUTER_ID4,
  WORKLOAD_PORT,
  samplePool,
  workloadContainer,
} from '../core/plan.js';
import { inNetns, listPods, podNetns, waitForReadyPods, type LabPod } from '../core/workloads.js';
import { countArrivals, inRef } from '../probes/arrivals.js';
import { agentStatusOf, probeFrom } from '../probes/status.js';
import { startLab } from '../core/test-lab.js';

const NS = 'default';
/** Node: GET argv[1], print the length of the body (or fail). */
const ECHO_LENGTH = `require('http').get(process.argv[1], { timeout: 10000 }, (r) => { let n = 0; r.on('data', (d) => (n += d.length)); r.on('end', () => process.stdout.write(String(n))); }).on('error', (e) => { console.error(e.message); process.exit(1); });`;

const { lab } = startLab({
  tmpPrefix: 'flock-lab-v4p-',
  tools: ['bird', 'nsenter', 'flock-controlplane', 'kubectl', 'ping'],
  nodes: 2,
  setup: async (lab) => {
    const pool = samplePool() as { spec: { ipv4: Record<string, unknown> } };
    pool.spec.ipv4 = { ...pool.spec.ipv4, mode: 'Private' };
    await lab.apply(POOLS, pool);
    for (const [name, node] of [
      ['pa', 1],
      ['pb', 1],
      ['pc', 2],
    ] as const)
      await lab.apply(PODS, {
        apiVersion: 'v1',
        kind: 'Pod',
        metadata: { name, namespace: NS, labels: { app: 'private', pod: name } },
        spec: {
          nodeName: lab.plans[node - 1]!.name,
          terminationGracePeriodSeconds: 0,
          containers: [workloadContainer('w')],
        },
      });
  },
});

/** The packets the forward chain's first rule naming `marker` dropped (nft -j). */
function forwardDrops(json: string, marker: string): number {
  const items = (JSON.parse(json) as { nftables: { rule?: { expr: unknown[] } }[] }).nftables;
  const rule = items.find((i) => i.rule && JSON.stringify(i.rule.expr).includes(marker))?.rule;
  const counter = rule?.expr.find((e) => typeof e === 'object' && e !== null && 'counter' in e) as
    { counter: { packets: number } } | undefined;
  return counter?.counter.packets ?? -1;
}

const nodeConfig = async (name: string) =>
  NodeConfig.parse(await lab.api!.request({ method: 'GET', path: objectPath(NODECONFIGS, name) }));
const routerNs = () => ({ netns: lab.router!.ns.name });
const v4 = (p: LabPod) => p.status!.podIPs!.map((i) => i.ip).find((ip) => !ip.includes(':'))!;
const pods = async () => {
  await waitForReadyPods(lab, NS, 'app=private', 3);
  const list = await listPods(lab, NS, 'app=private');
  return Object.fromEntries(list.map((p) => [p.metadata.name, p])) as Record<string, LabPod>;
};

describe('private IPv4 (ipv4.mode: Private)', () => {
  it("the router no longer learns the nodes' IPv4 slices; IPv6 stays; pods hold private addresses", async () => {
    await eventually('the IPv4 slices withdrawn', async () => {
      const learned = await lab.router!.learned();
      return learned.some((r) => cidrContainsIp(POOL_CIDR4, r.split('/')[0]!))
        ? undefined
        : learned;
    });
    const learned = await lab.router!.learned();
    for (const plan of lab.plans)
      expect(learned).toContain((await nodeConfig(plan.name)).spec.cidr6);
    const { pa } = await pods();
    const nc = await nodeConfig(pa!.spec.nodeName!);
    expect(nc.spec.ipv4).toMatchObject({ mode: 'Private', clusterCIDRs: [POOL_CIDR4] });
    expect(cidrContainsIp(nc.spec.cidr4!, v4(pa!))).toBe(true);
  });

  it("a pod reaches the router's IPv4 address from its node's address, and the answers come back", async () => {
    const { pa } = await pods();
    const node4 = lab.plans.find((p) => p.name === pa!.spec.nodeName)!.node4;
    const counts = await countArrivals(routerNs(), [node4, v4(pa!)]);
    const from = await podNetns(lab, pa!);
    const r = await inRef(from, 'ping', ['-4', '-c', '3', '-i', '0.2', '-W', '2', ROUTER_ID4]);
    expect(r.code).toBe(0);
    const seen = await counts();
    expect(seen[node4]).toBeGreaterThanOrEqual(3);
    expect(seen[v4(pa!)]).toBe(0);
  });

  it('a pod of its node is reached with the sender’s own address', async () => {
    const { pa, pb } = await pods();
    const counts = await countArrivals(await podNetns(lab, pb!), [v4(pa!)]);
    expect(await probeFrom(await podNetns(lab, pa!), v4(pb!))).toEqual({ ok: true, reply: 'pb' });
    expect((await counts())[v4(pa!)]).toBeGreaterThan(0);
  });

  it("a pod of another node is reached with the sender's own address, carried as IPv6; nothing private reaches the router", async () => {
    const { pa, pc } = await pods();
    // Each node announces its slice's part of the translation prefix.
    const parts = await Promise.all(
      lab.plans.map(async (plan) => {
        const { spec } = await nodeConfig(plan.name);
        return translatedRange(spec.ipv4!.interNodePrefix!, spec.cidr4!);
      }),
    );
    await eventually('the translated slices learned', async () => {
      const learned = await lab.router!.learned();
      return parts.every((p) => learned.includes(p)) ? learned : undefined;
    });
    const atC = await countArrivals(await podNetns(lab, pc!), [v4(pa!)]);
    const toRouter = await countArrivals(routerNs(), [v4(pa!), v4(pc!)]);
    expect(await probeFrom(await podNetns(lab, pa!), v4(pc!))).toEqual({ ok: true, reply: 'pc' });
    const r = await inRef(await podNetns(lab, pc!), 'ping', [
      '-4',
      '-c',
      '3',
      '-i',
      '0.2',
      '-W',
      '2',
      v4(pa!),
    ]);
    expect(r.code).toBe(0);
    expect((await atC())[v4(pa!)]).toBeGreaterThan(0);
    expect(await toRouter()).toEqual({ [v4(pa!)]: 0, [v4(pc!)]: 0 });
  });

  it("from the fabric, a forged source of the node's own slice is dropped; a source outside the prefix has no IPv4 address", async () => {
    const { pa, pb } = await pods();
    const { spec } = await nodeConfig(pb!.spec.nodeName!);
    const prefix = spec.ipv4!.interNodePrefix!;
    const at = (ip: string) => nat64Address(prefix, ip);
    // The router stands for anyone on the fabric: pb's address in the prefix, from pa's (a pod
    // of pb's own node) — policy would take it for pa.
    const router = lab.router!.ns;
    await router.exec('ip', ['-6', 'addr', 'replace', `${at(v4(pa!))}/128`, 'dev', 'lo', 'nodad']);
    const node = lab.nodes.find((n) => n.plan.name === pb!.spec.nodeName)!;
    const drops = async (marker: string) =>
      forwardDrops(
        (await node.ns.enter('nft', ['-j', 'list', 'chain', 'inet', 'flock', 'forward'])).stdout,
        marker,
      );
    /**
     * Ping from the router until `counter` has counted two of them. Under load the first ones
     * can be lost before the node (the router's fresh address, its neighbour entry), and a
     * policy pass that rewrites the chain starts its counters again: each attempt takes its
     * own baseline. Every ping must fail (nothing answers).
     */
    const countedDrops = async (what: string, counter: () => Promise<number>, args: string[]) => {
      const answered: string[] = [];
      await eventually(
        what,
        async () => {
          const before = await counter();
          const r = await inRef(
            routerNs(),
            'ping',
            ['-6', '-c', '2', '-i', '0.2', '-W', '1', ...args],
            [0, 1],
          );
          if (r.code !== 1) answered.push(r.stdout);
          return (await counter()) - before >= 2 ? true : undefined;
        },
        { timeoutMs: 30_000, intervalMs: 500 },
      );
      expect(answered, 'no ping of any attempt is answered').toEqual([]);
    };
    try {
      const atB = await countArrivals(await podNetns(lab, pb!), [v4(pa!)]);
      // Translated, they claim a pod of this node from outside: anti-spoofing drops them.
      await countedDrops(
        'forged pings counted by the anti-spoofing rule',
        () => drops('node_sources_v4'),
        ['-I', at(v4(pa!)), at(v4(pb!))],
      );
      // None of them, counted or lost, ever reached the pod.
      expect((await atB())[v4(pa!)]).toBe(0);
    } finally {
      await router.exec('ip', ['-6', 'addr', 'del', `${at(v4(pa!))}/128`, 'dev', 'lo'], {
        okCodes: [0, 2],
      });
    }
    // The router's own address is no translated one: the kernel drops it before Tayga, which
    // would have no IPv4 address for it either (a flood of them would only cost the kernel).
    await countedDrops(
      'pings from outside the prefix dropped before Tayga',
      () => drops('flock46'),
      [at(v4(pb!))],
    );
  });

  it("the translator's device deleted: nothing leaks unNATed meanwhile, and the agent makes it again", async () => {
    const { pa, pc } = await pods();
    const node = lab.nodes.find((n) => n.plan.name === pa!.spec.nodeName)!;
    const toRouter = await countArrivals(routerNs(), [v4(pa!)]);
    await node.ns.enter('ip', ['link', 'del', 'flock46']);
    // The range's blackhole is left beneath the translator's halves: dropped, not routed out.
    await inRef(
      await podNetns(lab, pa!),
      'ping',
      ['-4', '-c', '2', '-i', '0.2', '-W', '1', v4(pc!)],
      [0, 1],
    );
    expect((await toRouter())[v4(pa!)]).toBe(0);
    await eventually(
      'IPv4 between nodes again',
      async () => ((await probeFrom(await podNetns(lab, pa!), v4(pc!))).ok ? true : undefined),
      { timeoutMs: 60_000 },
    );
  });

  it('between nodes, a packet too big for the translation gets the path MTU back (1480); TCP adapts', async () => {
    const { pa, pc } = await pods();
    const from = await podNetns(lab, pa!);
    // 1472 bytes of ICMP payload make a 1500-byte IPv4 packet: 1520 as IPv6, more than the link.
    const big = await inRef(
      from,
      'ping',
      ['-4', '-c', '1', '-W', '2', '-M', 'do', '-s', '1472', v4(pc!)],
      [0, 1, 2],
    );
    expect(big.code).not.toBe(0);
    expect(`${big.stdout}${big.stderr}`).toMatch(/mtu = 1480|Message too long/);
    // Full-size segments both ways: each side learns 1480 from its translator and carries on.
    const msg = 'x'.repeat(6000);
    const get = inNetns(from, process.execPath, [
      '-e',
      ECHO_LENGTH,
      `http://${v4(pc!)}:${WORKLOAD_PORT}/echo?msg=${msg}`,
    ]);
    const r = await run(get.file, get.args, { timeoutMs: 15_000 });
    expect(r.stdout.trim()).toBe(String(msg.length));
  });

  /** pb's ingress: from this one IPv4 address only. */
  const admitOnly = (ip: string) =>
    lab.apply(NETWORK_POLICIES, {
      apiVersion: 'networking.k8s.io/v1',
      kind: 'NetworkPolicy',
      metadata: { name: 'pb-admits-one', namespace: NS },
      spec: {
        podSelector: { matchLabels: { pod: 'pb' } },
        policyTypes: ['Ingress'],
        ingress: [{ from: [{ ipBlock: { cidr: `${ip}/32` } }] }],
      },
    });

  it('NetworkPolicy on IPv4 peers judges the real pod', async () => {
    const { pa, pb, pc } = await pods();
    await admitOnly(v4(pa!));
    const pb6 = pb!.status!.podIPs!.find((i) => i.ip.includes(':'))!.ip;
    await eventually('pb admits pa over IPv4 only', async () => {
      const fromA = await probeFrom(await podNetns(lab, pa!), v4(pb!));
      const fromA6 = await probeFrom(await podNetns(lab, pa!), pb6);
      const fromC4 = await probeFrom(await podNetns(lab, pc!), v4(pb!));
      const fromC6 = await probeFrom(await podNetns(lab, pc!), pb6);
      return fromA.ok && !fromA6.ok && !fromC4.ok && !fromC6.ok ? true : undefined;
    });
    // A pod of the other node, admitted by its own private address: policy sees it as itself.
    await admitOnly(v4(pc!));
    await eventually('pb admits pc over IPv4 only', async () => {
      const fromA = await probeFrom(await podNetns(lab, pa!), v4(pb!));
      const fromC4 = await probeFrom(await podNetns(lab, pc!), v4(pb!));
      const fromC6 = await probeFrom(await podNetns(lab, pc!), pb6);
      return !fromA.ok && fromC4.ok && !fromC6.ok ? true : undefined;
    });
  });

  it('the NodeConfig counts and flock-agent status name the pods private', async () => {
    const { pa } = await pods();
    const a = await eventually('private pods counted', async () => {
      const s = (await nodeConfig(pa!.spec.nodeName!)).status?.allocations;
      return s?.ipv4Modes && s.ipv4Modes.private >= 2 ? s : undefined;
    });
    expect(a.ipv4Modes).toMatchObject({ public: 0, none: 0 });
    const node = lab.nodes.find((n) => n.plan.name === pa!.spec.nodeName)!;
    const status = await agentStatusOf(node);
    expect(status.allocations.find((e) => e.pod === 'pa')?.ipv4Mode).toBe('private');
    const { spec } = await nodeConfig(pa!.spec.nodeName!);
    expect(status.interNode).toEqual({
      prefix: spec.ipv4!.interNodePrefix,
      announced: translatedRange(spec.ipv4!.interNodePrefix!, spec.cidr4!),
      running: true,
      restarts: 0,
    });
    expect(status.announced.aggregates).toContain(status.interNode!.announced);
  });
});
