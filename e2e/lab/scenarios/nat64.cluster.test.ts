// NAT64 and DNS64 on real nodes (docs/install.md, "IPv4 modes"): the lab's Pool with nat64, an
// IPv4-only server beside the router, a pod with no IPv4 at all. The pod resolves the server's
// name through the cluster DNS (CoreDNS's dns64 answers AAAA at the lab's prefix), connects over
// IPv6, and its node's Tayga and masquerade carry it to the server, which sees the node's IPv4
// address.
import { NodeConfig } from '@flock/api';
import { nat64Address } from '@flock/agent';
import { NODECONFIGS, PODS, POOLS, objectPath } from '@flock/kube';
import { eventually } from '@flock/testkit';
import { afterAll, describe, expect, it } from 'vitest';
import { Ipv4OnlyServer } from '../core/ipv4-server.js';
import {
  IPV4_SERVER,
  LAB_NAT64_PREFIX,
  POOL_CIDR4,
  WORKLOAD_PORT,
  samplePool,
  workloadContainer,
} from '../core/plan.js';
import { startLab } from '../core/test-lab.js';
import { labKubectl, listPods, waitForReadyPods, type LabPod } from '../core/workloads.js';
import { countArrivals } from '../probes/arrivals.js';

const NS = 'default';
const SERVER_AT = nat64Address(LAB_NAT64_PREFIX, IPV4_SERVER.address);
let server: Ipv4OnlyServer | undefined;

const { lab } = startLab({
  tmpPrefix: 'flock-lab-nat64-',
  tools: ['bird', 'nsenter', 'flock-controlplane', 'kubectl', 'helm'],
  nodes: 2,
  // As production runs it: the agent image (Tayga inside) and the chart (the TUN device).
  install: 'helm',
  setup: async (lab) => {
    server = await Ipv4OnlyServer.start(lab.router!);
    const pool = samplePool() as { spec: Record<string, unknown> };
    pool.spec['nat64'] = { prefix: LAB_NAT64_PREFIX };
    await lab.apply(POOLS, pool);
    await lab.apply(PODS, {
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: {
        name: 'v6only',
        namespace: NS,
        labels: { app: 'nat64' },
        annotations: { 'flock.fritzlab.net/ipv4': 'none' },
      },
      spec: {
        nodeName: lab.plans[0]!.name,
        terminationGracePeriodSeconds: 0,
        containers: [workloadContainer('w')],
      },
    });
    // A pod with a public IPv4 address on the other node.
    await lab.apply(PODS, {
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name: 'dual', namespace: NS, labels: { app: 'nat64-target' } },
      spec: {
        nodeName: lab.plans[1]!.name,
        terminationGracePeriodSeconds: 0,
        containers: [workloadContainer('w')],
      },
    });
  },
});
afterAll(async () => {
  await server?.stop();
});

const pod = async (): Promise<LabPod> => {
  await waitForReadyPods(lab, NS, 'app=nat64', 1);
  return (await listPods(lab, NS, 'app=nat64'))[0]!;
};
const inPod = (p: LabPod, cmd: string[]) =>
  labKubectl(lab, ['exec', '-n', NS, p.metadata.name, '--', ...cmd], { okCodes: [0, 1, 6, 7, 28] });
const nodeOf = (p: LabPod) => lab.nodes.find((n) => n.plan.name === p.spec.nodeName)!;

describe('NAT64 and DNS64 (a Pool with nat64)', () => {
  it('every node runs the translator for the Pool’s prefix; the pod has no IPv4', async () => {
    // The setup changed the Pool just before: the operator writes the NodeConfigs after it.
    for (const plan of lab.plans)
      await eventually(`${plan.name}'s NodeConfig has the Pool's nat64`, async () => {
        const nc = NodeConfig.parse(
          await lab.api!.request({ method: 'GET', path: objectPath(NODECONFIGS, plan.name) }),
        );
        expect(nc.spec.nat64).toMatchObject({ prefix: LAB_NAT64_PREFIX, pool: '192.168.240.0/20' });
        expect(nc.spec.nat64?.clusterCIDRs).toContain(POOL_CIDR4);
        return true;
      });
    const node = nodeOf(await pod());
    await eventually('the prefix routed to flock64', async () => {
      const r = await node.ns.enter('ip', ['-6', 'route', 'show', LAB_NAT64_PREFIX], {
        okCodes: [0, 1],
      });
      return r.stdout.includes('dev flock64') ? true : undefined;
    });
    const ips = (await pod()).status!.podIPs!.map((i) => i.ip);
    expect(ips.every((ip) => ip.includes(':'))).toBe(true);
    // Counted as a pod that reaches IPv4 through NAT64.
    const modes = await eventually('the pod counted as nat64', async () => {
      const nc = NodeConfig.parse(
        await lab.api!.request({ method: 'GET', path: objectPath(NODECONFIGS, node.plan.name) }),
      );
      const m = nc.status?.allocations?.ipv4Modes;
      return m?.nat64 ? m : undefined;
    });
    expect(modes).toMatchObject({ none: 0 });
  });

  it('the pod resolves the IPv4-only server to an AAAA at the prefix (DNS64)', async () => {
    const p = await pod();
    const aaaa = await eventually('a synthesized AAAA', async () => {
      const r = await inPod(p, ['dig', '+short', 'AAAA', IPV4_SERVER.name]);
      return r.stdout.trim() || undefined;
    });
    expect(aaaa).toBe(SERVER_AT);
  });

  it("the pod reaches the server by name; the server sees the node's IPv4 address", async () => {
    const p = await pod();
    const node4 = nodeOf(p).plan.node4;
    const arrivals = await countArrivals({ netns: server!.ns.name }, [node4]);
    const answer = await eventually('an answer through NAT64', async () => {
      const r = await inPod(p, ['curl', '-sS', '-m', '5', `http://${IPV4_SERVER.name}/`]);
      return r.code === 0 ? r.stdout.trim() : undefined;
    });
    expect(answer).toBe(node4);
    expect((await arrivals())[node4]).toBeGreaterThan(0);
  });

  it("a pod's public IPv4 address is not reached through NAT64 (it would arrive as the node); its IPv6 is", async () => {
    const p = await pod();
    await waitForReadyPods(lab, NS, 'app=nat64-target', 1);
    const [dual] = await listPods(lab, NS, 'app=nat64-target');
    const ips = dual!.status!.podIPs!.map((i) => i.ip);
    const v4 = ips.find((ip) => !ip.includes(':'))!;
    const v6 = ips.find((ip) => ip.includes(':'))!;
    const get = (host: string) =>
      inPod(p, ['curl', '-sS', '-m', '3', `http://[${host}]:${WORKLOAD_PORT}/hostname`]);
    expect((await get(v6)).stdout.trim()).toBe('dual');
    const translated = await get(nat64Address(LAB_NAT64_PREFIX, v4));
    expect(translated.code).not.toBe(0);
  });
});
