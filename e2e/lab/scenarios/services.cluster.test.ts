// LoadBalancer Services on real nodes (docs/announcements.md, "Service addresses"): the operator
// assigns an address from the sample Pool's Service ranges, the agents announce it from the
// nodes that should get its traffic, kube-proxy delivers it. Probed from the router, as a client
// outside the cluster.
import { setTimeout as delay } from 'node:timers/promises';
import { SHARING_KEY_ANNOTATION, claimName } from '@flock/api';
import { ADDRESSCLAIMS, NAMESPACES, SERVICES, objectPath } from '@flock/kube';
import { eventually } from '@flock/testkit';
import { describe, expect, it } from 'vitest';
import { labDeployment, labScript } from '../core/plan.js';
import { readState } from '../core/state.js';
import { startLab } from '../core/test-lab.js';
import {
  DEPLOYMENTS,
  applySamples,
  inNetns,
  labKubectl,
  listPods,
  setReady,
  waitForReadyPods,
} from '../core/workloads.js';
import {
  deleteService as deleteLabService,
  getService as getLabService,
  ingressIps,
  lbService,
  routerHops,
  serviceEvents as labServiceEvents,
  waitForIngress,
} from '../core/services.js';
import { RouterWatch } from '../probes/router-watch.js';
import { probeFromRouter, WORKLOAD_PORT } from '../probes/status.js';
import { run } from '@flock/exec';

const { lab, dir } = startLab({
  tmpPrefix: 'flock-lab-svc-',
  tools: ['bird', 'nsenter', 'flock-controlplane', 'kubectl'],
  nodes: 3,
  setup: async (lab) => {
    await applySamples(lab, 3);
    await lab.apply(NAMESPACES, {
      apiVersion: 'v1',
      kind: 'Namespace',
      metadata: { name: 'nogrant' },
    });
  },
});

const nodeAddress = (nodeName: string | undefined) =>
  lab.plans.find((p) => p.name === nodeName)!.node6;
const hops = (ip: string) => routerHops(lab, ip);
const sameSet = (a: readonly string[], b: readonly string[]) =>
  JSON.stringify([...a].sort()) === JSON.stringify([...b].sort());
const getService = (name: string, namespace = 'default') => getLabService(lab, name, namespace);
const assigned = (name: string, namespace = 'default', count = 1) =>
  waitForIngress(lab, name, namespace, count);
const serviceEvents = (namespace: string, name: string, reason: string) =>
  labServiceEvents(lab, namespace, name, reason);
const deleteService = (name: string, namespace = 'default') =>
  deleteLabService(lab, name, namespace);

describe('LoadBalancer Services on real nodes', () => {
  it('Local, pods on 2 of 3 nodes: assigned within a second, those 2 next hops, answers from the router; a node without a ready endpoint drops within 1 s; Cluster: every node', async () => {
    const [a, b, c] = lab.plans;
    await lab.apply(
      DEPLOYMENTS,
      labDeployment({
        name: 'lb-local',
        replicas: 2,
        toggleReady: true,
        podSpec: {
          affinity: {
            nodeAffinity: {
              requiredDuringSchedulingIgnoredDuringExecution: {
                nodeSelectorTerms: [
                  {
                    matchExpressions: [
                      { key: 'kubernetes.io/hostname', operator: 'In', values: [a!.name, b!.name] },
                    ],
                  },
                ],
              },
            },
            podAntiAffinity: {
              requiredDuringSchedulingIgnoredDuringExecution: [
                {
                  topologyKey: 'kubernetes.io/hostname',
                  labelSelector: { matchLabels: { app: 'lb-local' } },
                },
              ],
            },
          },
        },
      }),
    );
    const pods = await waitForReadyPods(lab, 'default', 'app=lb-local', 2);
    const created = Date.now();
    await lab.apply(SERVICES, lbService('lb-local', 'lb-local', { local: true }));
    const [ip] = await assigned('lb-local');
    const assignedMs = Date.now() - created;
    const want = pods.map((p) => nodeAddress(p.spec.nodeName));
    await eventually(
      'the router has exactly the two nodes with endpoints',
      async () => sameSet(await hops(ip!), want),
      { intervalMs: 50 },
    );
    const routedMs = Date.now() - created;
    console.log(
      `LoadBalancer Local: assigned after ${assignedMs} ms, routable at the router after ${routedMs} ms`,
    );
    expect(assignedMs).toBeLessThan(1_000);
    const state = (await readState(dir))!;
    // The nodes announce it only once kube-proxy delivers there: it answers at once.
    expect((await probeFromRouter(state, ip!)).ok).toBe(true);

    // The endpoint on one node turns not ready: that node's next hop goes within a second of the
    // EndpointSlice saying so.
    const gone = pods[0]!;
    await setReady(lab, gone, false);
    const notReadyAt = await eventually(
      'the endpoint is not ready in its EndpointSlice',
      async () => {
        const { stdout } = await labKubectl(lab, [
          'get',
          'endpointslices',
          '-l',
          'kubernetes.io/service-name=lb-local',
          '-o',
          'json',
        ]);
        const slices = JSON.parse(stdout) as {
          items: { endpoints?: { nodeName?: string; conditions?: { ready?: boolean } }[] }[];
        };
        const e = slices.items
          .flatMap((s) => s.endpoints ?? [])
          .find((x) => x.nodeName === gone.spec.nodeName);
        return e?.conditions?.ready === false ? Date.now() : undefined;
      },
      { intervalMs: 50 },
    );
    const left = want.filter((h) => h !== nodeAddress(gone.spec.nodeName));
    await eventually('the router drops that node', async () => sameSet(await hops(ip!), left), {
      intervalMs: 50,
    });
    const droppedMs = Date.now() - notReadyAt;
    console.log(
      `LoadBalancer Local: endpoint not ready -> next hop gone at the router: ${droppedMs} ms`,
    );
    expect(droppedMs).toBeLessThan(1_000);
    await setReady(lab, gone, true);

    // Cluster: every node of the pool.
    await labKubectl(lab, [
      'patch',
      'service',
      'lb-local',
      '--type=merge',
      '-p',
      '{"spec":{"externalTrafficPolicy":"Cluster"}}',
    ]);
    const all = [a!, b!, c!].map((p) => p.node6);
    await eventually('every node is a next hop', async () => sameSet(await hops(ip!), all), {
      intervalMs: 100,
    });
  });

  it('a rolling update of the backing Deployment under probes from the router: no failed probe, never no next hop', async () => {
    const deployment = labDeployment({ name: 'lb-roll', replicas: 2 }) as {
      spec: {
        template: { spec: { containers: Record<string, unknown>[] } & Record<string, unknown> };
      };
    };
    // The pod keeps serving while its node withdraws its route (well under a second).
    deployment.spec.template.spec.terminationGracePeriodSeconds = 15;
    deployment.spec.template.spec.containers[0]!.lifecycle = {
      preStop: { exec: { command: ['/bin/sh', '-c', 'sleep 5'] } },
    };
    await lab.apply(DEPLOYMENTS, deployment);
    await waitForReadyPods(lab, 'default', 'app=lb-roll', 2);
    await lab.apply(SERVICES, lbService('lb-roll', 'lb-roll', { local: true }));
    const [ip] = await assigned('lb-roll');
    await eventually('routed', async () => (await hops(ip!)).length > 0);
    const watch = RouterWatch.start(lab.router!, [ip!], 100, 1_000);
    const empty: number[] = [];
    let sampling = true;
    const sampler = (async () => {
      while (sampling) {
        if ((await hops(ip!)).length === 0) empty.push(Date.now());
        await delay(50);
      }
    })();
    let result;
    try {
      await eventually('the prober running', async () => watch.probed() || undefined, {
        timeoutMs: 10_000,
      });
      await labKubectl(lab, ['rollout', 'restart', 'deployment/lb-roll']);
      await labKubectl(lab, ['rollout', 'status', 'deployment/lb-roll', '--timeout=120s'], {
        timeoutMs: 130_000,
      });
      // The old pods finish their preStop while the new ones serve.
      await eventually(
        'the old pods are gone',
        async () => (await listPods(lab, 'default', 'app=lb-roll')).length === 2,
        { timeoutMs: 60_000 },
      );
    } finally {
      sampling = false;
      await sampler;
      result = await watch.stop();
    }
    const probes = Object.values(result.summary)[0]!;
    console.log(
      `LoadBalancer rollout: ${probes.ok} probes answered, ${probes.failed} failed; moments with no next hop: ${empty.length}`,
    );
    if (result.failures.length)
      console.log(
        `failed probes: ${JSON.stringify(result.failures)}\nroute changes:\n${result.changes.join('\n')}`,
      );
    expect(probes.ok).toBeGreaterThan(50);
    expect(result.failures).toEqual([]);
    expect(empty).toEqual([]);
  });

  it('dual stack, sharing by key, a namespace without a grant, another class, deletion releases', async () => {
    await lab.apply(SERVICES, lbService('dual', 'web', { dualStack: true }));
    const dual = await assigned('dual', 'default', 2);
    expect(dual.filter((ip) => ip.includes(':'))).toHaveLength(1);
    expect(dual.filter((ip) => !ip.includes(':'))).toHaveLength(1);
    const state = (await readState(dir))!;
    // Cluster: every node announces it once its kube-proxy holds the address (its next sync).
    for (const ip of dual)
      await eventually(
        `${ip} answers from the router`,
        async () => (await probeFromRouter(state, ip)).ok,
        { timeoutMs: 10_000 },
      );

    // Sharing: same key, different ports: one address; a third with a port in use: not that one.
    const shared = { [SHARING_KEY_ANNOTATION]: 'web-shared' };
    await lab.apply(SERVICES, lbService('share-a', 'web', { annotations: shared, port: 8080 }));
    await lab.apply(SERVICES, lbService('share-b', 'web', { annotations: shared, port: 9090 }));
    const [ipA] = await assigned('share-a');
    const [ipB] = await assigned('share-b');
    expect(ipB).toBe(ipA);
    await lab.apply(SERVICES, lbService('share-c', 'web', { annotations: shared, port: 8080 }));
    const [ipC] = await assigned('share-c');
    expect(ipC).not.toBe(ipA);

    // No grant for the namespace: nothing assigned, an Event says why.
    await lab.apply(SERVICES, lbService('refused', 'web', { namespace: 'nogrant' }));
    const refused = await eventually(
      'refused with an Event',
      async () => (await serviceEvents('nogrant', 'refused', 'AddressRefused'))[0],
    );
    expect(refused).toBeTruthy();
    expect(ingressIps(await getService('refused', 'nogrant'))).toEqual([]);

    // Another class: left alone, status untouched.
    await lab.apply(
      SERVICES,
      lbService('other-class', 'web', { loadBalancerClass: 'example.com/other' }),
    );
    await delay(3_000);
    expect(ingressIps(await getService('other-class'))).toEqual([]);

    // Deletion releases: the routes go, the claim turns into the address's quarantine.
    await deleteService('dual');
    for (const ip of dual) {
      await eventually(`${ip} withdrawn`, async () => (await hops(ip)).length === 0);
      const claim = (await lab.api!.request({
        method: 'GET',
        path: objectPath(ADDRESSCLAIMS, claimName(ip)),
      })) as {
        spec: { services?: string[]; releasedAt?: string };
      };
      expect(claim.spec.services ?? []).toEqual([]);
      expect(claim.spec.releasedAt).toBeDefined();
    }
    for (const name of ['share-a', 'share-b', 'share-c', 'other-class']) await deleteService(name);
    await deleteService('refused', 'nogrant');
  });

  it('external IPs: only inside a Service range granted to the namespace, claimed for the Service, announced and answering', async () => {
    const granted = '2001:db8:400::f0';
    const ungranted = '2001:db8:400::f1';
    const foreign = '2001:db8:dead::1';
    const ext = (namespace: string, externalIPs: string[]) =>
      lbService('ext-ip', 'web', { namespace, type: 'ClusterIP', family: 'IPv6', externalIPs });
    await lab.apply(SERVICES, ext('default', [granted, foreign]));
    await lab.apply(SERVICES, ext('nogrant', [ungranted]));
    const all = lab.plans.map((p) => p.node6);
    await eventually(
      'every node announces the granted one',
      async () => sameSet(await hops(granted), all),
      {
        intervalMs: 100,
      },
    );
    const state = (await readState(dir))!;
    await eventually(
      `${granted} answers from the router`,
      async () => (await probeFromRouter(state, granted)).ok,
      { timeoutMs: 10_000 },
    );
    const claim = (await lab.api!.request({
      method: 'GET',
      path: objectPath(ADDRESSCLAIMS, claimName(granted)),
    })) as { spec: { namespace: string; services?: string[] } };
    expect(claim.spec).toMatchObject({ namespace: 'default', services: ['ext-ip'] });
    // A namespace may not name an address of a range it has no grant for: refused, not routed.
    const refused = await eventually(
      'refused with an Event',
      async () => (await serviceEvents('nogrant', 'ext-ip', 'AddressRefused'))[0],
    );
    expect(refused).toContain(ungranted);
    // Outside every flock range: not flock's to announce.
    expect(await hops(ungranted)).toEqual([]);
    expect(await hops(foreign)).toEqual([]);
    await deleteService('ext-ip');
    await deleteService('ext-ip', 'nogrant');
    await eventually(`${granted} withdrawn`, async () => (await hops(granted)).length === 0);
  });

  it('exhaustion of a family: a Warning Event on the Service, nothing assigned', async () => {
    // The sample's IPv4 Service range is a /28: 14 addresses to give (not the network or broadcast).
    const names = Array.from({ length: 15 }, (_, i) => `v4-${i}`);
    for (const name of names) await lab.apply(SERVICES, lbService(name, 'web', { family: 'IPv4' }));
    const exhausted = await eventually(
      'one Service is told the pool is exhausted',
      async () => {
        for (const name of names) {
          const e = await serviceEvents('default', name, 'AddressPoolExhausted');
          if (e.length) return name;
        }
        return undefined;
      },
      { timeoutMs: 60_000 },
    );
    expect(ingressIps(await getService(exhausted))).toEqual([]);
    for (const name of names) await deleteService(name);
  });

  it("the control plane, outside the cluster, reaches a ClusterIP Service through the router (the pool's nodes announce the Service CIDRs)", async () => {
    await lab.apply(SERVICES, {
      apiVersion: 'v1',
      kind: 'Service',
      metadata: { name: 'web-cluster-ip', namespace: 'default' },
      spec: {
        selector: { app: 'web' },
        ports: [{ port: WORKLOAD_PORT, targetPort: WORKLOAD_PORT }],
      },
    });
    const svc = await getService('web-cluster-ip');
    const clusterIP = svc.spec!.clusterIP!;
    const state = (await readState(dir))!;
    const probe = inNetns({ netns: state.controlPlaneNetns! }, process.execPath, [
      labScript('probe'),
      clusterIP,
      String(WORKLOAD_PORT),
    ]);
    const answer = await eventually(
      'the control plane gets an answer from a web pod',
      async () => {
        const r = await run(probe.file, probe.args, { okCodes: [0, 1], timeoutMs: 10_000 });
        return r.code === 0 ? r.stdout.trim() : undefined;
      },
      { timeoutMs: 30_000 },
    );
    expect(answer.split('\n').at(-1)).toMatch(/^web-/);
    await deleteService('web-cluster-ip');
  });
});
