// The hostile-tenant suite (issue 38, docs/reliability.md): what one tenant of a shared cluster
// can try against flock from its own namespace, or from outside, on real nodes. Tenant `a` is
// the attacker; tenant `b` has a `victim` whose NetworkPolicy admits only its `friend` (both on
// node 0, with the attacker), and a pod `far` on node 1. Each case says what must happen, and
// checks first that the probe itself can see the thing it looks for.
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { setTimeout as delay } from 'node:timers/promises';
import { ANYCAST_ANNOTATION } from '@flock/api';
import { NAMESPACES, NETWORK_POLICIES, PODS } from '@flock/kube';
import { eventually } from '@flock/testkit';
import { describe, expect, it } from 'vitest';
import { labDeployment, ROUTER_ID4, ROUTER_ID6, workloadContainer } from '../core/plan.js';
import { readState } from '../core/state.js';
import { startLab } from '../core/test-lab.js';
import {
  DEPLOYMENTS,
  podNetns,
  waitForPods,
  type LabPod,
  type NetnsRef,
} from '../core/workloads.js';
import { countArrivals, inRef, pings } from '../probes/arrivals.js';
import { probeFromRouter } from '../probes/status.js';

const AGENT_PORT = 9901;
const FORGER = join(import.meta.dirname, '..', 'probes', 'forge-neighbours.py');

const { lab, dir } = startLab({
  tmpPrefix: 'flock-lab-hostile-',
  tools: ['bird', 'nsenter', 'flock-controlplane', 'kubectl', 'python3', 'nc.openbsd'],
  nodes: 2,
  // The agents' health and metrics port, as the chart runs them.
  agentArgs: ['--health-port', String(AGENT_PORT)],
  setup: async (lab) => {
    const node0 = lab.plans[0]!.name;
    const node1 = lab.plans[1]!.name;
    for (const name of ['tenant-a', 'tenant-b'])
      await lab.apply(NAMESPACES, { apiVersion: 'v1', kind: 'Namespace', metadata: { name } });
    const on = (node: string) => ({ nodeSelector: { 'kubernetes.io/hostname': node } });
    await lab.apply(
      DEPLOYMENTS,
      labDeployment({ name: 'attacker', namespace: 'tenant-a', replicas: 1, podSpec: on(node0) }),
    );
    for (const [name, node] of [
      ['victim', node0],
      ['friend', node0],
      ['far', node1],
    ] as const)
      await lab.apply(
        DEPLOYMENTS,
        labDeployment({ name, namespace: 'tenant-b', replicas: 1, podSpec: on(node) }),
      );
    await lab.apply(NETWORK_POLICIES, {
      apiVersion: 'networking.k8s.io/v1',
      kind: 'NetworkPolicy',
      metadata: { name: 'victim-admits-friend', namespace: 'tenant-b' },
      spec: {
        podSelector: { matchLabels: { app: 'victim' } },
        policyTypes: ['Ingress'],
        ingress: [{ from: [{ podSelector: { matchLabels: { app: 'friend' } } }] }],
      },
    });
    for (const [ns, app] of [
      ['tenant-a', 'attacker'],
      ['tenant-b', 'victim'],
      ['tenant-b', 'friend'],
      ['tenant-b', 'far'],
    ])
      await waitForPods(lab, ns!, `app=${app}`, 1);
  },
});

const pod = async (ns: string, app: string): Promise<LabPod> =>
  (await waitForPods(lab, ns, `app=${app}`, 1))[0]!;
const ips = (p: LabPod) => {
  const all = p.status!.podIPs!.map((x) => x.ip);
  return { v6: all.find((a) => a.includes(':'))!, v4: all.find((a) => !a.includes(':'))! };
};
const routerNs = (): NetnsRef => ({ netns: lab.router!.ns.name });
describe('a hostile tenant', () => {
  it("a NET_ADMIN pod that takes another pod's address sends nothing from it: not to a pod of its node, another node, nor the router (IPv6 and IPv4)", async () => {
    const attacker = await pod('tenant-a', 'attacker');
    const friend = ips(await pod('tenant-b', 'friend'));
    const targets = {
      victim: await podNetns(lab, await pod('tenant-b', 'victim')),
      far: await podNetns(lab, await pod('tenant-b', 'far')),
      router: routerNs(),
    };
    const to = {
      victim: ips(await pod('tenant-b', 'victim')),
      far: ips(await pod('tenant-b', 'far')),
      router: { v6: ROUTER_ID6, v4: ROUTER_ID4 },
    };
    const own = ips(attacker);
    const from = await podNetns(lab, attacker);
    // What a pod with NET_ADMIN can do: give itself the friend's addresses.
    await inRef(from, 'ip', ['-6', 'addr', 'add', `${friend.v6}/128`, 'dev', 'eth0', 'nodad']);
    await inRef(from, 'ip', ['addr', 'add', `${friend.v4}/32`, 'dev', 'eth0']);
    try {
      for (const [name, ref] of Object.entries(targets) as [keyof typeof to, NetnsRef][]) {
        const counts = await countArrivals(ref, [friend.v6, friend.v4, own.v6, own.v4]);
        for (const family of ['v6', 'v4'] as const) {
          await pings(from, friend[family], to[name][family]);
          await pings(from, own[family], to[name][family]);
        }
        const seen = await counts();
        expect({ name, v6: seen[friend.v6], v4: seen[friend.v4] }).toEqual({ name, v6: 0, v4: 0 });
        // The probe sees packets: the attacker's own address reaches what policy lets it reach.
        if (name !== 'victim')
          expect({ name, v6: seen[own.v6]! > 0, v4: seen[own.v4]! > 0 }).toEqual({
            name,
            v6: true,
            v4: true,
          });
      }
      // The victim does receive its friend (the same counter, the real sender).
      const friendNs = await podNetns(lab, await pod('tenant-b', 'friend'));
      const counts = await countArrivals(targets.victim, [friend.v6, friend.v4]);
      for (const family of ['v6', 'v4'] as const)
        await pings(friendNs, friend[family], to.victim[family]);
      const seen = await counts();
      expect(seen[friend.v6]).toBeGreaterThan(0);
      expect(seen[friend.v4]).toBeGreaterThan(0);
    } finally {
      await inRef(from, 'ip', ['-6', 'addr', 'del', `${friend.v6}/128`, 'dev', 'eth0'], [0, 2]);
      await inRef(from, 'ip', ['addr', 'del', `${friend.v4}/32`, 'dev', 'eth0'], [0, 2]);
    }
  });

  it("a packet from outside with the source of a pod on the victim's node is dropped there (its policy admits that pod)", async () => {
    const friend = ips(await pod('tenant-b', 'friend'));
    const victim = await pod('tenant-b', 'victim');
    const to = ips(victim);
    const router = routerNs();
    const counts = await countArrivals(await podNetns(lab, victim), [friend.v6, friend.v4]);
    await inRef(router, 'ip', ['-6', 'addr', 'add', `${friend.v6}/128`, 'dev', 'lo', 'nodad']);
    await inRef(router, 'ip', ['addr', 'add', `${friend.v4}/32`, 'dev', 'lo']);
    try {
      for (const family of ['v6', 'v4'] as const) await pings(router, friend[family], to[family]);
      expect(await counts()).toEqual({ [friend.v6]: 0, [friend.v4]: 0 });
    } finally {
      await inRef(router, 'ip', ['-6', 'addr', 'del', `${friend.v6}/128`, 'dev', 'lo'], [0, 2]);
      await inRef(router, 'ip', ['addr', 'del', `${friend.v4}/32`, 'dev', 'lo'], [0, 2]);
    }
  });

  it("5,000 forged neighbour solicitations and ARP requests from a pod: the node's neighbour tables stay small and a new pod is reachable", async () => {
    const node = lab.node(lab.plans[0]!.name);
    const neighbours = async (family: '-4' | '-6') =>
      (await node.ns.enter('ip', [family, 'neigh', 'show'])).stdout.split('\n').filter(Boolean)
        .length;
    // Our own counters on the node, before flock's tables: what arrived from the attacker's veth.
    const attackerPod = await pod('tenant-a', 'attacker');
    const route = JSON.parse(
      (await node.ns.enter('ip', ['-j', 'route', 'get', ips(attackerPod).v6])).stdout,
    ) as { dev: string }[];
    const veth = route[0]!.dev;
    await node.ns.enter('nft', ['delete', 'table', 'arp', 'hostile_count'], { okCodes: [0, 1] });
    await node.ns.enter('nft', ['delete', 'table', 'ip6', 'hostile_count'], { okCodes: [0, 1] });
    for (const cmd of [
      'add table arp hostile_count',
      'add chain arp hostile_count in { type filter hook input priority -400; }',
      `add rule arp hostile_count in iifname ${veth} counter`,
      'add table ip6 hostile_count',
      'add chain ip6 hostile_count in { type filter hook input priority -400; }',
      `add rule ip6 hostile_count in iifname ${veth} icmpv6 type nd-neighbor-solicit counter`,
    ])
      await node.ns.enter('nft', [cmd]);
    const arrived = async (family: 'arp' | 'ip6') => {
      const { stdout } = await node.ns.enter('nft', [
        '-j',
        'list',
        'chain',
        family,
        'hostile_count',
        'in',
      ]);
      const rules = (
        JSON.parse(stdout) as {
          nftables: { rule?: { expr: { counter?: { packets: number } }[] } }[];
        }
      ).nftables;
      return (
        rules.flatMap(
          (o) => o.rule?.expr.flatMap((e) => (e.counter ? [e.counter.packets] : [])) ?? [],
        )[0] ?? 0
      );
    };
    const before = { v4: await neighbours('-4'), v6: await neighbours('-6') };
    const attacker = await podNetns(lab, attackerPod);
    const { stdout } = await inRef(attacker, 'python3', [FORGER, 'eth0', '5000']);
    expect(stdout).toContain('sent 5000 ARP requests and 5000 neighbour solicitations');
    await delay(500);
    const after = { v4: await neighbours('-4'), v6: await neighbours('-6') };
    // Every forged frame reached the node; the node learned (almost) nothing from them.
    expect(await arrived('arp')).toBeGreaterThanOrEqual(5000);
    expect(await arrived('ip6')).toBeGreaterThanOrEqual(5000);
    for (const family of ['arp', 'ip6'])
      await node.ns.enter('nft', ['delete', 'table', family, 'hostile_count']);
    expect(after.v4 - before.v4).toBeLessThan(10);
    expect(after.v6 - before.v6).toBeLessThan(10);
    // A new pod on that node: wired, and reached from the router on both families.
    await lab.apply(
      DEPLOYMENTS,
      labDeployment({
        name: 'newcomer',
        namespace: 'tenant-b',
        replicas: 1,
        podSpec: { nodeSelector: { 'kubernetes.io/hostname': lab.plans[0]!.name } },
      }),
    );
    const newcomer = await pod('tenant-b', 'newcomer');
    const state = (await readState(dir))!;
    for (const ip of Object.values(ips(newcomer)))
      expect(await probeFromRouter(state, ip)).toEqual({ ok: true, reply: newcomer.metadata.name });
  });

  it("a pod asking its node's agent port (health and metrics) is refused; the router gets an answer", async () => {
    const plan = lab.plans[0]!;
    const attacker = await podNetns(lab, await pod('tenant-a', 'attacker'));
    for (const address of [plan.node6, plan.node4]) {
      const fromPod = await inRef(
        attacker,
        'nc',
        ['-z', '-w', '2', address, String(AGENT_PORT)],
        [0, 1],
      );
      expect({ address, code: fromPod.code }).toEqual({ address, code: 1 });
      const fromRouter = await inRef(
        routerNs(),
        'nc',
        ['-z', '-w', '2', address, String(AGENT_PORT)],
        [0, 1],
      );
      expect({ address, code: fromRouter.code }).toEqual({ address, code: 0 });
    }
  });

  it("a pod asking for the node's BGP port or the agent's as its hostPort is refused at ADD: no DNAT, the session stays up", async () => {
    const plan = lab.plans[0]!;
    const name = 'port-thief';
    await lab.apply(PODS, {
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name, namespace: 'tenant-a', labels: { app: name } },
      spec: {
        nodeSelector: { 'kubernetes.io/hostname': plan.name },
        terminationGracePeriodSeconds: 0,
        containers: [
          {
            ...(workloadContainer('w') as Record<string, unknown>),
            ports: [
              { containerPort: 8080, hostPort: 179, protocol: 'TCP' },
              { containerPort: 8081, hostPort: AGENT_PORT, protocol: 'TCP' },
            ],
          },
        ],
      },
    });
    const refusals = await eventually(
      `a FlockHostPortRefused Event on ${name}`,
      async () => {
        const list = (await lab.api!.request({
          method: 'GET',
          path: '/api/v1/namespaces/tenant-a/events',
        })) as {
          items: { reason?: string; message?: string; involvedObject?: { name?: string } }[];
        };
        const found = list.items.filter(
          (e) => e.reason === 'FlockHostPortRefused' && e.involvedObject?.name === name,
        );
        return found.length ? found : undefined;
      },
      { timeoutMs: 90_000, intervalMs: 1_000 },
    );
    expect(refusals[0]!.message).toMatch(/179.*reserved|reserved.*179/);
    // Nothing of it reached the datapath: no address, no DNAT of a node port.
    const thief = (await lab.api!.request({
      method: 'GET',
      path: `/api/v1/namespaces/tenant-a/pods/${name}`,
    })) as LabPod;
    expect(thief.status?.podIPs ?? []).toEqual([]);
    const { stdout } = await lab
      .node(plan.name)
      .ns.enter('nft', ['list', 'table', 'inet', 'flock']);
    expect(stdout).not.toMatch(/\b(179|9901)\s*:/);
    expect((await lab.router!.sessions()).get(plan.routerIf)).toBe('Established');
  });

  it('40 unschedulable pods with 190 KB annotations grow no agent by 8 MiB or more', async () => {
    const rss = async () =>
      Promise.all(
        lab.plans.map(async (p) => {
          const status = await readFile(
            `/proc/${lab.node(p.name).agent!.child.pid}/status`,
            'utf8',
          );
          return Number(/VmRSS:\s+(\d+) kB/.exec(status)?.[1]) * 1024;
        }),
      );
    const before = await rss();
    const big = 'x'.repeat(190_000);
    for (let i = 0; i < 40; i++)
      await lab.api!.request({
        method: 'POST',
        path: '/api/v1/namespaces/tenant-a/pods',
        body: {
          apiVersion: 'v1',
          kind: 'Pod',
          metadata: {
            name: `heavy-${i}`,
            labels: { app: 'heavy' },
            annotations: { [ANYCAST_ANNOTATION]: big },
          },
          spec: {
            nodeSelector: { 'flock.test/nowhere': 'true' },
            containers: [{ name: 'c', image: 'registry.k8s.io/pause:3.10' }],
          },
        },
      });
    // Every agent has seen them (its watch delivered the 40 pods) before it is measured.
    await delay(5_000);
    const after = await rss();
    process.stderr.write(
      `agent RSS before/after 40 heavy pods (MiB): ${before.map((b, i) => `${(b / 2 ** 20).toFixed(1)} -> ${(after[i]! / 2 ** 20).toFixed(1)}`).join(', ')}\n`,
    );
    for (const [i, b] of before.entries())
      expect(after[i]! - b, lab.plans[i]!.name).toBeLessThan(8 * 2 ** 20);
    await lab.api!.request({
      method: 'DELETE',
      path: '/api/v1/namespaces/tenant-a/pods',
      query: { labelSelector: 'app=heavy' },
    });
  });

  it("a namespace churning 70 pods through one node: another namespace's pod there starts within 10 s", async () => {
    const node0 = lab.plans[0]!.name;
    const churn = (replicas: number) =>
      lab.apply(
        DEPLOYMENTS,
        labDeployment({
          name: 'churn',
          namespace: 'tenant-a',
          replicas,
          podSpec: { nodeSelector: { 'kubernetes.io/hostname': node0 } },
        }),
      );
    for (let wave = 0; wave < 2; wave++) {
      await churn(35);
      await waitForPods(lab, 'tenant-a', 'app=churn', 35, 240_000);
      await churn(0);
      await eventually(
        'the churn pods are gone',
        async () => {
          const list = (await lab.api!.request({
            method: 'GET',
            path: '/api/v1/namespaces/tenant-a/pods',
            query: { labelSelector: 'app=churn' },
          })) as { items: unknown[] };
          return list.items.length === 0;
        },
        { timeoutMs: 120_000, intervalMs: 500 },
      );
    }
    const start = Date.now();
    await lab.apply(PODS, {
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name: 'late', namespace: 'tenant-b', labels: { app: 'late' } },
      spec: {
        nodeSelector: { 'kubernetes.io/hostname': node0 },
        terminationGracePeriodSeconds: 1,
        containers: (
          labDeployment({ name: 'late', replicas: 1 }) as {
            spec: { template: { spec: { containers: object[] } } };
          }
        ).spec.template.spec.containers,
      },
    });
    const [late] = await waitForPods(lab, 'tenant-b', 'app=late', 1, 30_000);
    const took = Date.now() - start;
    process.stderr.write(`after 70 churned pods, tenant-b's pod ran in ${took} ms\n`);
    expect(Object.values(ips(late!)).every((ip) => ip)).toBe(true);
    expect(took).toBeLessThan(10_000);
  });
});
