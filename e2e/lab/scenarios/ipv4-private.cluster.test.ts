// Private IPv4 on real nodes (docs/install.md, "IPv4 modes"): the lab's Pool switched to
// ipv4.mode: Private. The router stops learning the nodes' IPv4 slices; a pod reaches the
// router's IPv4 address from its node's address (SNAT), a pod of its node with its own address,
// and NetworkPolicy on IPv4 peers still judges the real pod. A pod of another node is not
// reached over private IPv4 (IPv6 carries that), and nothing of the private range leaks to the
// router.
import { NodeConfig, cidrContainsIp } from '@flock/api';
import { NETWORK_POLICIES, NODECONFIGS, PODS, POOLS, objectPath } from '@flock/kube';
import { eventually } from '@flock/testkit';
import { describe, expect, it } from 'vitest';
import { POOL_CIDR4, ROUTER_ID4, samplePool, workloadContainer } from '../core/plan.js';
import { listPods, podNetns, waitForReadyPods, type LabPod } from '../core/workloads.js';
import { countArrivals, inRef, pings } from '../probes/arrivals.js';
import { agentStatusOf, probeFrom } from '../probes/status.js';
import { startLab } from '../core/test-lab.js';

const NS = 'default';

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

  it('a pod of its node is reached with the sender’s own address; one of another node is not, and nothing leaks to the router', async () => {
    const { pa, pb, pc } = await pods();
    const counts = await countArrivals(await podNetns(lab, pb!), [v4(pa!)]);
    expect(await probeFrom(await podNetns(lab, pa!), v4(pb!))).toEqual({ ok: true, reply: 'pb' });
    expect((await counts())[v4(pa!)]).toBeGreaterThan(0);

    const toRouter = await countArrivals(routerNs(), [v4(pa!)]);
    await pings(await podNetns(lab, pa!), v4(pa!), v4(pc!));
    expect((await probeFrom(await podNetns(lab, pa!), v4(pc!))).ok).toBe(false);
    expect((await toRouter())[v4(pa!)]).toBe(0);
    // Between nodes the pods talk IPv6.
    const pc6 = pc!.status!.podIPs!.find((i) => i.ip.includes(':'))!.ip;
    expect(await probeFrom(await podNetns(lab, pa!), pc6)).toEqual({ ok: true, reply: 'pc' });
  });

  it('NetworkPolicy on IPv4 peers judges the real pod', async () => {
    const { pa, pb, pc } = await pods();
    await lab.apply(NETWORK_POLICIES, {
      apiVersion: 'networking.k8s.io/v1',
      kind: 'NetworkPolicy',
      metadata: { name: 'pb-from-pa', namespace: NS },
      spec: {
        podSelector: { matchLabels: { pod: 'pb' } },
        policyTypes: ['Ingress'],
        ingress: [{ from: [{ ipBlock: { cidr: `${v4(pa!)}/32` } }] }],
      },
    });
    await eventually('pb admits pa over IPv4 only', async () => {
      const fromA = await probeFrom(await podNetns(lab, pa!), v4(pb!));
      const pb6 = pb!.status!.podIPs!.find((i) => i.ip.includes(':'))!.ip;
      const fromA6 = await probeFrom(await podNetns(lab, pa!), pb6);
      const fromC6 = await probeFrom(await podNetns(lab, pc!), pb6);
      return fromA.ok && !fromA6.ok && !fromC6.ok ? true : undefined;
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
  });
});
