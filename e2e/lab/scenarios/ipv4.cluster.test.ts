// IPv4 that does not run out, on a real node (docs/install.md, "IPv4 modes"): a Pool whose
// ipv4.assign is OnRequest gives a public /32 only to pods that ask from a granted namespace;
// the others are IPv6-only, so a node with a /28 (14 usable addresses) runs 100 pods and more.
import { IPV4_ANNOTATION, NodeConfig, cidrContainsIp } from '@flock/api';
import { NAMESPACES, NODECONFIGS, POOLS, objectPath } from '@flock/kube';
import { eventually } from '@flock/testkit';
import { describe, expect, it } from 'vitest';
import { samplePool, workloadContainer } from '../core/plan.js';
import { DEPLOYMENTS, listPods, waitForPods, waitForReadyPods } from '../core/workloads.js';
import { agentStatusOf, probeFromRouter } from '../probes/status.js';
import { readState } from '../core/state.js';
import { startLab } from '../core/test-lab.js';

/** The node's IPv4 slice: 14 usable addresses, far fewer than the pods it runs. */
const SLICE = 28;
const CROWD = 100;
const GRANTED = 'v4-granted';
const OTHER = 'v4-other';
const ASK = { [IPV4_ANNOTATION]: 'public' };

const { lab, dir } = startLab({
  tmpPrefix: 'flock-lab-v4-',
  tools: ['bird', 'nsenter', 'flock-controlplane', 'kubectl'],
  nodes: 1,
  nodePrefix4: SLICE,
  maxPods: CROWD + 20,
  setup: async (lab) => {
    for (const name of [GRANTED, OTHER])
      await lab.apply(NAMESPACES, { apiVersion: 'v1', kind: 'Namespace', metadata: { name } });
    const pool = samplePool(SLICE) as { spec: { ipv4: Record<string, unknown> } };
    pool.spec.ipv4 = {
      ...pool.spec.ipv4,
      assign: 'OnRequest',
      grants: [{ namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': GRANTED } } }],
    };
    await lab.apply(POOLS, pool);
    await eventually('the NodeConfig says OnRequest', async () => {
      const nc = await nodeConfig();
      return nc.spec.ipv4?.assign === 'OnRequest' ? nc : undefined;
    });
  },
});

const node = () => lab.plans[0]!.name;
const nodeConfig = async () =>
  NodeConfig.parse(
    await lab.api!.request({ method: 'GET', path: objectPath(NODECONFIGS, node()) }),
  );

/** A Deployment of `replicas` pods on the node, in `namespace`, with `annotations`. */
function deployment(
  name: string,
  namespace: string,
  replicas: number,
  annotations: Record<string, string>,
  container: object = workloadContainer('w'),
): object {
  return {
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: { name, namespace },
    spec: {
      replicas,
      selector: { matchLabels: { app: name } },
      template: {
        metadata: { labels: { app: name }, annotations },
        spec: { nodeName: node(), terminationGracePeriodSeconds: 0, containers: [container] },
      },
    },
  };
}

describe('public IPv4 by request (ipv4.assign: OnRequest)', () => {
  it('a pod that asks gets a public /32 the router routes to it; a pod that does not gets none', async () => {
    await lab.apply(DEPLOYMENTS, deployment('asks', GRANTED, 1, ASK));
    await lab.apply(DEPLOYMENTS, deployment('plain', GRANTED, 1, {}));
    const [asks] = await waitForReadyPods(lab, GRANTED, 'app=asks', 1);
    const [plain] = await waitForReadyPods(lab, GRANTED, 'app=plain', 1);
    const nc = await nodeConfig();
    const asksIps = asks!.status!.podIPs!.map((i) => i.ip);
    expect(asksIps).toHaveLength(2);
    expect(cidrContainsIp(nc.spec.cidr4!, asksIps[1]!)).toBe(true);
    const plainIps = plain!.status!.podIPs!.map((i) => i.ip);
    expect(plainIps).toHaveLength(1);
    expect(cidrContainsIp(nc.spec.cidr6, plainIps[0]!)).toBe(true);

    const routes = await lab.router!.routes();
    expect(routes.find((r) => r.prefix === nc.spec.cidr4)?.via).toEqual([lab.plans[0]!.node6]);
    const state = (await readState(dir))!;
    for (const ip of [...asksIps, ...plainIps])
      expect(await probeFromRouter(state, ip), ip).toMatchObject({ ok: true });
  });

  it('a pod of a namespace no grant names that asks is refused, told so by an Event, and holds nothing', async () => {
    await lab.apply(DEPLOYMENTS, deployment('thief', OTHER, 1, ASK));
    const event = await eventually('a FlockAddressRefused event', async () => {
      const list = (await lab.api!.request({
        method: 'GET',
        path: `/api/v1/namespaces/${OTHER}/events`,
      })) as { items: { reason?: string; message?: string }[] };
      return list.items.find((e) => e.reason === 'FlockAddressRefused');
    });
    expect(event.message).toMatch(/no grant of this node's Pool names namespace v4-other/);
    const [thief] = await listPods(lab, OTHER, 'app=thief');
    expect(thief?.status?.podIPs ?? []).toEqual([]);
  });

  it(`${CROWD} pods that do not ask all start on one node whose slice has 14 addresses; the status counts say how each reaches IPv4`, async () => {
    // agnhost pause: no readiness probe, so 100 pods cost the node their start only.
    const pause = {
      name: 'p',
      image: (workloadContainer('w') as { image: string }).image,
      args: ['pause'],
    };
    await lab.apply(DEPLOYMENTS, deployment('crowd', GRANTED, CROWD, {}, pause));
    const crowd = await waitForPods(lab, GRANTED, 'app=crowd', CROWD, 600_000);
    expect(crowd.every((p) => p.status!.podIPs!.length === 1)).toBe(true);
    expect(new Set(crowd.map((p) => p.status!.podIPs![0]!.ip)).size).toBe(CROWD);

    const counts = await eventually('the NodeConfig counts the crowd', async () => {
      const a = (await nodeConfig()).status?.allocations;
      return a?.ipv4Modes && a.ipv4Modes.none >= CROWD + 1 ? a : undefined;
    });
    // Pods that started before the Pool said OnRequest (CoreDNS) kept their IPv4.
    expect(counts.ipv4Modes!.public).toBe(counts.ipv4);
    expect(counts.ipv4).toBeLessThanOrEqual(2 ** (32 - SLICE) - 2);

    const s = await agentStatusOf(lab.nodes[0]!);
    const mode = (pod: string) => s.allocations.find((a) => a.pod.startsWith(pod))?.ipv4Mode;
    expect(mode('asks-')).toBe('public');
    expect(mode('plain-')).toBe('none');
    expect(s.allocations.filter((a) => a.ipv4Mode === 'none').length).toBe(counts.ipv4Modes!.none);
  });
});
