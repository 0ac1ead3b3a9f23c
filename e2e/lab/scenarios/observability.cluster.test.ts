// Observability on a helm-installed lab of 2 real nodes: `flock-agent status` run with kubectl
// exec in each agent container; a real Prometheus (Debian's package) scraping every agent and
// operator, evaluating every query of the chart's Grafana dashboard (each must return data: a
// query with no number in its answer fails the test), loading the chart's alert rules, and
// FlockBGPSessionDown firing once the router's BIRD is stopped.
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { AgentStatus } from '@flock/agent';
import { NodePeer, PeerSlice, nodePeerOf, sameNodePeer } from '@flock/api';
import { CLUSTER_NETWORK_POLICIES, objectPath, silentLogger } from '@flock/kube';
import { eventually, requireKernelTier } from '@flock/testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { Dashboard, dashboardQueries } from '../../shared/dashboard.js';
import { CHART, FLOCK_NAMESPACE } from '../core/helm.js';
import { PodList } from '../core/pod-list.js';
import { Lab } from '../core/lab.js';
import { SAMPLE_ANYCAST6, SAMPLE_PINNED6, ROUTER_ID6 } from '../core/plan.js';
import { LabPrometheus, hasData } from '../probes/prometheus.js';
import { probeFrom } from '../probes/status.js';
import {
  applySamples,
  labKubectl,
  listPods,
  podNetns,
  waitForPods,
  waitForReadyPods,
  type LabPod,
} from '../core/workloads.js';

const RULES = join(CHART, 'files', 'alerts.yaml');
const PeerSliceList = z.object({ items: z.array(PeerSlice) });
const NodePeerList = z.object({ items: z.array(NodePeer) });
const NodeList = z.object({
  items: z.array(
    z.object({
      metadata: z.object({
        name: z.string(),
        uid: z.string(),
        labels: z.record(z.string(), z.string()).optional(),
      }),
      status: z.object({ addresses: z.array(z.object({ address: z.string() })) }).optional(),
    }),
  ),
});
let lab: Lab;
let dir: string;
let prometheus: LabPrometheus | undefined;

beforeAll(async () => {
  requireKernelTier(
    'bird',
    'nsenter',
    'flock-controlplane',
    'kubectl',
    'helm',
    'prometheus',
    'promtool',
    'curl',
  );
  dir = await mkdtemp(join(tmpdir(), 'flock-lab-observability-'));
  lab = new Lab({ nodes: 2, dir, log: silentLogger, install: 'helm' });
  await lab.up();
}, 600_000);

afterAll(async () => {
  await prometheus?.stop();
  await lab?.down();
  if (dir) await rm(dir, { recursive: true, force: true });
});

const flockPods = async (name: string): Promise<LabPod[]> =>
  listPods(lab, FLOCK_NAMESPACE, `app.kubernetes.io/name=${name}`);

/** host:port of the node a pod runs on (the agents and operators use the node's network). */
function nodeTarget(pod: LabPod, port: number): string {
  const plan = lab.plans.find((p) => p.name === pod.spec.nodeName);
  if (!plan) throw new Error(`pod ${pod.metadata.name} is on no lab node`);
  return `[${plan.node6}]:${port}`;
}

/** What BIRD exports for the agent: every class of its routes. */
const exportedTotal = (r: NonNullable<AgentStatus['routesExported']>) =>
  r.aggregate + r.pinned + r.anycast + (r.services ?? 0);

describe('observability on real nodes', () => {
  it('Prometheus scrapes every agent and operator; the samples run', async () => {
    const agents = await flockPods('flock-agent');
    const operators = await flockPods('flock-operator');
    expect(agents).toHaveLength(2);
    prometheus = await LabPrometheus.start(
      lab.router!.ns,
      join(dir, 'prometheus'),
      [
        { job: 'flock-agent', targets: agents.map((p) => nodeTarget(p, 9901)) },
        { job: 'flock-operator', targets: [...new Set(operators.map((p) => nodeTarget(p, 9902)))] },
      ],
      [RULES],
    );
    await eventually(
      'every target up',
      async () => {
        const targets = await prometheus!.targets();
        return targets.length >= 3 && targets.every((t) => t.health === 'up') ? targets : undefined;
      },
      { timeoutMs: 60_000, intervalMs: 1000 },
    );
    // Pods come and go while Prometheus watches: ADDs, BIRD reloads for the pinned and anycast
    // addresses, NetworkPolicy passes for the shop policies.
    await applySamples(lab, 2);
  }, 300_000);

  it('flock-agent status (kubectl exec in the agent container) shows peers, routes, allocations, announcements, policy', async () => {
    const agents = await flockPods('flock-agent');
    // A node announces an anycast address only while the pod behind it is Ready; Running (what
    // applySamples waits for) comes first, and under load the probe passes seconds later.
    await waitForReadyPods(lab, 'default', 'app=anycast', 2);
    const all = [
      ...(await listPods(lab, 'default', 'app')),
      ...(await listPods(lab, 'shop', 'app')),
    ].filter((p) => p.status?.phase === 'Running' && !p.spec.hostNetwork);
    const seen = { pinned: 0, anycast: 0 };
    for (const agent of agents) {
      const exec = (args: string[]) =>
        labKubectl(lab, [
          'exec',
          '-n',
          FLOCK_NAMESPACE,
          agent.metadata.name,
          '-c',
          'agent',
          '--',
          'flock-agent',
          'status',
          ...args,
        ]);
      const status = await eventually(
        `${agent.spec.nodeName}: every local pod in the status, everything exported`,
        async () => {
          const s = AgentStatus.parse(JSON.parse((await exec(['--output', 'json'])).stdout));
          const local = all.filter((p) => p.spec.nodeName === agent.spec.nodeName);
          const held = new Set(s.allocations.map((a) => `${a.namespace}/${a.pod}`));
          const complete = local.every((p) =>
            held.has(`${p.metadata.namespace}/${p.metadata.name}`),
          );
          const anycastHere = local.some((p) => p.metadata.labels?.app === 'anycast');
          const announced =
            !anycastHere || s.announced.anycast.some((a) => a.address === SAMPLE_ANYCAST6);
          const r = s.routesExported;
          const exported =
            r?.pinned === s.announced.pinned.length && r.anycast === s.announced.anycast.length;
          // BIRD is asked for its sessions every 5 s: its count follows the accepted config.
          const seen = s.peers[0]?.routesExported === (r ? exportedTotal(r) : -1);
          return complete && announced && exported && seen && s.peers[0]?.state === 'Established'
            ? s
            : undefined;
        },
        { timeoutMs: 60_000, intervalMs: 1000 },
      );
      expect(status).toMatchObject({
        node: agent.spec.nodeName,
        ready: true,
        bird: { state: 'applied' },
        policy: { enforced: true, ok: true, reason: 'Applied' },
      });
      expect(status.peers).toEqual([
        expect.objectContaining({ address: ROUTER_ID6, asn: 65000, state: 'Established' }),
      ]);
      expect(status.peers[0]!.uptimeSeconds).toBeGreaterThanOrEqual(0);
      expect(status.peers[0]!.routesExported).toBe(exportedTotal(status.routesExported!));
      // The sample LoadBalancer (Cluster: every node) and the pool's two Service CIDRs.
      expect(status.routesExported!.services).toBeGreaterThanOrEqual(2);
      expect(status.routesExported!.aggregate).toBe(2);
      expect(status.addresses.map((a) => a.family)).toEqual(['ipv6', 'ipv4']);
      seen.pinned += status.announced.pinned.filter((a) => a === SAMPLE_PINNED6).length;
      seen.anycast += status.announced.anycast.filter((a) => a.address === SAMPLE_ANYCAST6).length;
      const text = (await exec([])).stdout;
      console.log(`flock-agent status on ${agent.spec.nodeName}:\n${text}`);
      expect(text).toMatch(new RegExp(`^node ${agent.spec.nodeName} .*ready$`, 'm'));
      expect(text).toMatch(/^ {2}2001:db8:ffff::1 +65000 +Established +\S+s +\d+/m);
      expect(text).toMatch(/^NetworkPolicy: applied \(Applied\)/m);
    }
    // The pinned pod's node announces its address; both anycast replicas' nodes announce theirs.
    expect(seen).toEqual({ pinned: 1, anycast: 2 });
  }, 180_000);

  it("every panel of the chart's dashboard returns data from the real Prometheus", async () => {
    const dashboard = Dashboard.parse(
      JSON.parse(await readFile(join(CHART, 'files', 'dashboard.json'), 'utf8')),
    );
    const queries = dashboardQueries(dashboard);
    let empty: string[] = [];
    try {
      await eventually(
        'every panel with data',
        async () => {
          empty = [];
          for (const q of queries)
            if (!hasData(await prometheus!.query(q.expr))) empty.push(q.panel);
          return empty.length === 0 ? true : undefined;
        },
        { timeoutMs: 150_000, intervalMs: 5000 },
      );
    } catch {
      // Say which panels stayed empty, not only that the wait timed out.
    }
    expect(empty, 'panels whose query returned no data').toEqual([]);
    console.log(`dashboard: ${queries.length} panel queries, all with data`);
  }, 240_000);

  it('packets the shop policy refuses are counted for the shop pod (flock_agent_policy_dropped_packets_total)', async () => {
    const [shop] = await waitForPods(lab, 'shop', 'app=shop', 1);
    const [outsider] = await waitForPods(lab, 'outsider', 'app=outsider', 1);
    const series = `flock_agent_policy_dropped_packets_total{namespace="shop",pod="${shop!.metadata.name}",direction="ingress"}`;
    const dropped = async () =>
      (await prometheus!.query(series)).reduce((n, s) => n + Number(s.value[1]), 0);
    const before = await eventually('the shop pod’s drop counter scraped', async () => {
      const r = await prometheus!.query(series);
      return r.length ? dropped() : undefined;
    });
    const from = await podNetns(lab, outsider!);
    for (const { ip } of shop!.status!.podIPs!) expect((await probeFrom(from, ip)).ok).toBe(false);
    const after = await eventually(
      'the refused packets counted',
      async () => {
        const n = await dropped();
        return n > before ? n : undefined;
      },
      { timeoutMs: 30_000, intervalMs: 1000 },
    );
    console.log(`shop's ingress drop counter: ${before} -> ${after} after outsider's probes`);
  }, 120_000);

  it("each agent caches only its own node's pods; the others' come from the operator's PeerSlices", async () => {
    const podsByNode = async () =>
      PodList.parse(await lab.api!.request({ method: 'GET', path: '/api/v1/pods' })).items;
    await eventually(
      'agent pod caches hold their own node’s pods, the slices every peer',
      async () => {
        const pods = await podsByNode();
        const cached = await prometheus!.query('flock_agent_cache_objects{cache="pods"}');
        const slices = PeerSliceList.parse(
          await lab.api!.request({
            method: 'GET',
            path: '/apis/flock.fritzlab.net/v1alpha1/peerslices',
          }),
        ).items;
        const published = slices
          .flatMap((s) => s.spec.pods.map((p) => `${s.spec.namespace}/${p.name}`))
          .sort();
        const peers = pods
          .filter((p) => !p.spec.hostNetwork && (p.status?.podIPs ?? []).length > 0)
          .map((p) => `${p.metadata.namespace}/${p.metadata.name}`)
          .sort();
        const perNode = cached.map((c) => {
          const plan = lab.plans.find((x) => c.metric['instance']?.includes(x.node6));
          return {
            node: plan?.name,
            cached: Number(c.value[1]),
            pods: pods.filter((p) => p.spec.nodeName === plan?.name).length,
          };
        });
        const ok =
          perNode.length === 2 &&
          perNode.every((n) => n.cached === n.pods && n.pods < pods.length) &&
          JSON.stringify(published) === JSON.stringify(peers);
        return ok ? { perNode, slices: slices.length, peers: peers.length } : undefined;
      },
      { timeoutMs: 90_000, intervalMs: 3000 },
    ).then((r) =>
      console.log(
        `pod caches ${JSON.stringify(r.perNode)}; ${r.peers} peers in ${r.slices} PeerSlices`,
      ),
    );
  }, 120_000);

  it('the alert rules load; FlockBGPSessionDown fires when the router stops speaking BGP', async () => {
    const rules = await prometheus!.rules();
    expect(rules.map((r) => r.name).sort()).toEqual([
      'FlockAddressQuarantinePressure',
      'FlockBGPSessionDown',
      'FlockBirdReloadFailing',
      'FlockNodeAddressesExhausted',
      'FlockPolicyApplyFailing',
      'FlockPoolExhausted',
    ]);
    expect(
      rules.every((r) => r.health === 'ok'),
      JSON.stringify(rules),
    ).toBe(true);
    expect(await prometheus!.alerts()).toEqual([]);
    const stopped = Date.now();
    await lab.router!.bird!.stop();
    const firing = await eventually(
      'FlockBGPSessionDown firing for both nodes',
      async () => {
        const alerts = (await prometheus!.alerts()).filter(
          (a) => a.labels['alertname'] === 'FlockBGPSessionDown' && a.state === 'firing',
        );
        return alerts.length === 2 ? alerts : undefined;
      },
      // for: 1m, after the agent's next BIRD poll (5 s) and scrape; a scrape that times out on a
      // loaded machine makes the series stale and starts the minute again.
      { timeoutMs: 240_000, intervalMs: 2000 },
    );
    expect(firing.map((a) => a.labels['peer'])).toEqual([ROUTER_ID6, ROUTER_ID6]);
    console.log(
      `FlockBGPSessionDown firing ${Math.round((Date.now() - stopped) / 1000)} s after the router's BIRD stopped (for: 1m)`,
    );
  }, 200_000);

  it('every Node has its NodePeer; a node label set while no operator ran reaches the agents’ rules once one runs again', async () => {
    const get = async (path: string) => lab.api!.request({ method: 'GET', path });
    await eventually(
      'a NodePeer a Node, saying what the Node says, owned by it',
      async () => {
        const nodes = NodeList.parse(await get('/api/v1/nodes')).items;
        const peers = NodePeerList.parse(
          await get('/apis/flock.fritzlab.net/v1alpha1/nodepeers'),
        ).items;
        const ok =
          peers.length === nodes.length &&
          nodes.every((n) => {
            const p = peers.find((x) => x.metadata.name === n.metadata.name);
            return (
              p?.metadata.ownerReferences?.[0]?.['uid'] === n.metadata.uid &&
              sameNodePeer(p.spec, nodePeerOf(n))
            );
          });
        return ok || undefined;
      },
      { timeoutMs: 60_000, intervalMs: 1000 },
    );
    const [from, to] = [lab.nodes[0]!, lab.plans[1]!];
    const label = 'flock.test/no-egress';
    const cnp = {
      apiVersion: 'policy.networking.k8s.io/v1alpha2',
      kind: 'ClusterNetworkPolicy',
      metadata: { name: 'no-egress-to-nodes' },
      spec: {
        tier: 'Admin',
        priority: 7,
        subject: { namespaces: {} },
        egress: [{ action: 'Deny', to: [{ nodes: { matchLabels: { [label]: 'yes' } } }] }],
      },
    };
    // The addresses in the sets of that rule on the first node's ruleset.
    const denied = async () => {
      const { stdout } = await from.ns.enter('nft', ['list', 'ruleset']);
      const refs = stdout
        .split('\n')
        .filter((l) => l.includes('comment "Admin no-egress-to-nodes egress[0]'))
        .flatMap((l) => [...l.matchAll(/@(\w+)/g)].map((m) => m[1]!));
      return refs
        .map((name) => new RegExp(`set ${name} \\{[^}]*\\}`).exec(stdout)?.[0] ?? '')
        .join('\n');
    };
    const operator = (replicas: number) =>
      labKubectl(lab, [
        ...['-n', FLOCK_NAMESPACE, 'scale', 'deployment/flock-operator'],
        `--replicas=${replicas}`,
      ]);
    const setLabel = (value: string) =>
      labKubectl(lab, ['label', 'node', to.name, `${label}${value}`, '--overwrite']);
    const replicas = (await flockPods('flock-operator')).length;
    await lab.apply(CLUSTER_NETWORK_POLICIES, cnp);
    try {
      expect(await denied()).not.toContain(to.node6);
      await operator(0);
      await eventually('no operator running', async () =>
        (await flockPods('flock-operator')).length === 0 ? true : undefined,
      );
      await setLabel('=yes');
      // Only the operator publishes what a Node says: nothing changes while none runs.
      await new Promise((r) => setTimeout(r, 5_000));
      expect(await denied()).not.toContain(to.node6);
      await operator(replicas);
      const seen = Date.now();
      await eventually(
        'the labelled node’s address denied',
        async () => ((await denied()).includes(to.node6) ? true : undefined),
        { timeoutMs: 120_000, intervalMs: 1000 },
      );
      console.log(`node label in force ${Date.now() - seen} ms after the operator was scaled up`);
      await setLabel('-');
      await eventually('the label gone, the address too', async () =>
        (await denied()).includes(to.node6) ? undefined : true,
      );
    } finally {
      await operator(replicas);
      await setLabel('-');
      await lab.api!.request({
        method: 'DELETE',
        path: objectPath(CLUSTER_NETWORK_POLICIES, cnp.metadata.name),
      });
    }
  }, 300_000);
});
