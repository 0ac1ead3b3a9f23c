// Address ownership on real nodes (docs/announcements.md, "Who may announce what"): every
// floating address has one owner, claimed through the API server. A namespace without a grant
// gets nothing; two namespaces racing for one pinned address never both get it; a holder being
// deleted passes its address to its own replacement only, and the router never sees two paths.
import { setTimeout as delay } from 'node:timers/promises';
import { ANYCAST_ANNOTATION, PINNED_IP_ANNOTATION, claimName } from '@flock/api';
import { ADDRESSCLAIMS, NAMESPACES, POOLS, PODS, objectPath } from '@flock/kube';
import { eventually } from '@flock/testkit';
import { describe, expect, it } from 'vitest';
import {
  POOL_NAME,
  ROUTER_ID6,
  SAMPLE_ANYCAST6,
  labDeployment,
  samplePool,
  workloadContainer,
} from '../core/plan.js';
import {
  DEPLOYMENTS,
  applySamples,
  execInPod,
  labKubectl,
  listPods,
  waitForReadyPods,
  type LabPod,
} from '../core/workloads.js';
import { startLab } from '../core/test-lab.js';

/** Pinned addresses of this suite: inside the sample Pool's pinned range, apart from the sample's. */
const RACE_BASE = 0x80;
const HANDOVER = '2001:db8:200::f0';
const HANDOVER_MOVED = '2001:db8:200::f1';
const TENANTS = ['team-a', 'team-b'];

const { lab } = startLab({
  tmpPrefix: 'flock-lab-own-',
  tools: ['bird', 'nsenter', 'flock-controlplane', 'kubectl'],
  nodes: 3,
  setup: async (lab) => {
    await applySamples(lab, 3);
    for (const name of [...TENANTS, 'evil'])
      await lab.apply(NAMESPACES, {
        apiVersion: 'v1',
        kind: 'Namespace',
        metadata: { name, labels: TENANTS.includes(name) ? { 'flock-test/tenant': 'yes' } : {} },
      });
    // The tenants may claim pinned addresses too (the sample grants `default` only).
    const pool = samplePool() as { spec: { pinned: { grants?: object[] } } };
    pool.spec.pinned.grants = [
      ...(pool.spec.pinned.grants ?? []),
      { namespaceSelector: { matchLabels: { 'flock-test/tenant': 'yes' } } },
    ];
    await lab.apply(POOLS, pool);
  },
});

const nodeAddress = (nodeName: string | undefined) =>
  lab.plans.find((p) => p.name === nodeName)!.node6;
const hops = (address: string) => lab.router!.nextHops(`${address}/128`);

/** Warning Events with `reason` on the pods of a namespace. */
async function events(
  namespace: string,
  reason: string,
): Promise<{ pod: string; message: string }[]> {
  const list = (await lab.api!.request({
    method: 'GET',
    path: `/api/v1/namespaces/${namespace}/events`,
  })) as { items: { reason?: string; message?: string; involvedObject?: { name?: string } }[] };
  return list.items
    .filter((e) => e.reason === reason)
    .map((e) => ({ pod: e.involvedObject?.name ?? '', message: e.message ?? '' }));
}

/** A bare pod of the lab workload on one node, asking for `annotations`. */
function barePod(
  name: string,
  namespace: string,
  node: string,
  annotations: Record<string, string>,
): object {
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name, namespace, labels: { app: 'ownership' }, annotations },
    spec: {
      nodeName: node,
      terminationGracePeriodSeconds: 0,
      containers: [workloadContainer('w')],
    },
  };
}

async function deletePod(namespace: string, name: string): Promise<void> {
  await lab
    .api!.request({
      method: 'DELETE',
      path: objectPath(PODS, name, namespace),
      body: { gracePeriodSeconds: 0 },
    })
    .catch(() => undefined);
}

/** Sample the router's next hops of `address` every 100 ms until stopped. */
function watchHops(address: string): { seen: string[][]; stop: () => Promise<void> } {
  const seen: string[][] = [];
  let on = true;
  const running = (async () => {
    while (on) {
      seen.push(await hops(address));
      await delay(100);
    }
  })();
  return {
    seen,
    stop: async () => {
      on = false;
      await running;
    },
  };
}

describe('address ownership on real nodes', () => {
  it('a pod of a namespace without a grant asking for the sample anycast address is refused; the router keeps its next hops; the address cannot be sent from', async () => {
    const replicas = await waitForReadyPods(lab, 'default', 'app=anycast', 2);
    const before = await eventually('the router holds both anycast paths', async () => {
      const h = await hops(SAMPLE_ANYCAST6);
      return h.length === 2 ? h : undefined;
    });
    const free = lab.plans.find((p) => !replicas.some((r) => r.spec.nodeName === p.name))!;
    await lab.apply(
      DEPLOYMENTS,
      labDeployment({
        name: 'thief',
        namespace: 'evil',
        replicas: 1,
        annotations: { [ANYCAST_ANNOTATION]: SAMPLE_ANYCAST6 },
        podSpec: { nodeName: free.name },
      }),
    );
    const refused = await eventually('refused with an Event', async () => {
      const e = await events('evil', 'FlockAddressRefused');
      return e[0]?.message;
    });
    expect(refused).toContain(`namespace evil may not claim anycast address ${SAMPLE_ANYCAST6}`);
    const [thief] = await listPods(lab, 'evil', 'app=thief');
    expect(thief?.status?.phase).toBe('Pending');
    expect(await hops(SAMPLE_ANYCAST6)).toEqual(before);

    // A running pod of that namespace puts the address on its own interface and sends from it:
    // its node drops it (the address is not among the pod's sources).
    await lab.apply(
      DEPLOYMENTS,
      labDeployment({
        name: 'sender',
        namespace: 'evil',
        replicas: 1,
        podSpec: { nodeName: free.name },
      }),
    );
    const [sender] = await waitForReadyPods(lab, 'evil', 'app=sender', 1);
    const run = (file: string, args: string[]) =>
      execInPod(lab, sender!, file, args, { okCodes: [0, 1] });
    await run('ip', ['-6', 'addr', 'add', `${SAMPLE_ANYCAST6}/128`, 'dev', 'eth0', 'nodad']);
    const router = lab.router!.ns;
    await router.exec('nft', ['add', 'table', 'inet', 'owncheck']);
    try {
      await router.exec('nft', [
        'add chain inet owncheck pre { type filter hook prerouting priority -300; }',
      ]);
      await router.exec('nft', [`add rule inet owncheck pre ip6 saddr ${SAMPLE_ANYCAST6} counter`]);
      await run('ping', [
        '-6',
        '-c',
        '3',
        '-i',
        '0.2',
        '-W',
        '1',
        '-I',
        SAMPLE_ANYCAST6,
        ROUTER_ID6,
      ]);
      await delay(500);
      const { stdout } = await router.exec('nft', ['list', 'chain', 'inet', 'owncheck', 'pre']);
      expect(stdout).toMatch(/counter packets 0 /);
    } finally {
      await router.exec('nft', ['delete', 'table', 'inet', 'owncheck']);
    }
    for (const name of ['thief', 'sender'])
      await lab.api!.request({
        method: 'DELETE',
        path: `/apis/apps/v1/namespaces/evil/deployments/${name}`,
      });
  });

  it('two namespaces on two nodes asking for one pinned address at the same instant: one owner, one next hop, 20 rounds', async () => {
    const [a, b] = lab.plans;
    const winners: string[] = [];
    for (let round = 0; round < 20; round++) {
      const address = `2001:db8:200::${(RACE_BASE + round).toString(16)}`;
      const watch = watchHops(address);
      const ask = { [PINNED_IP_ANNOTATION]: address };
      const names = [`race-${round}`, `race-${round}`];
      try {
        await Promise.all([
          lab.api!.request({
            method: 'POST',
            path: '/api/v1/namespaces/team-a/pods',
            body: barePod(names[0]!, 'team-a', a!.name, ask),
          }),
          lab.api!.request({
            method: 'POST',
            path: '/api/v1/namespaces/team-b/pods',
            body: barePod(names[1]!, 'team-b', b!.name, ask),
          }),
        ]);
        // One runs with the address; the other is refused (an Event, kept Pending).
        const outcome = await eventually(
          `round ${round}: one pod Running with ${address}, the other refused`,
          async () => {
            const pods = (
              await Promise.all(TENANTS.map((ns) => listPods(lab, ns, 'app=ownership')))
            ).flat();
            const holding = pods.filter((p) => p.status?.podIPs?.some((i) => i.ip === address));
            const refused = (
              await Promise.all(TENANTS.map((ns) => events(ns, 'FlockAddressRefused')))
            )
              .flat()
              .filter((e) => e.pod === `race-${round}`);
            if (holding.length >= 1 && refused.length >= 1) return { holding, pods };
            // Not yet: say where things stand, for the timeout message.
            const all = (
              await Promise.all(TENANTS.map((ns) => events(ns, 'FlockAddressRefused')))
            ).flat();
            throw new Error(
              `pods ${pods.map((p) => `${p.metadata.namespace}/${p.metadata.name}@${p.spec.nodeName}:${p.status?.phase}:${JSON.stringify(p.status?.podIPs ?? [])}`).join(' ')}; refusals ${JSON.stringify(all.slice(-4))}`,
            );
          },
          { timeoutMs: 60_000, intervalMs: 250 },
        );
        expect(outcome.holding).toHaveLength(1);
        const winner = outcome.holding[0]!;
        winners.push(winner.metadata.namespace);
        await eventually(
          `round ${round}: the router routes ${address} to the winner`,
          async () =>
            JSON.stringify(await hops(address)) ===
            JSON.stringify([nodeAddress(winner.spec.nodeName)]),
        );
      } finally {
        await watch.stop();
        for (const ns of TENANTS) await deletePod(ns, `race-${round}`);
      }
      expect(watch.seen.filter((h) => h.length > 1)).toEqual([]);
      await eventually(
        `round ${round}: the claim is released`,
        async () => {
          try {
            await lab.api!.request({
              method: 'GET',
              path: objectPath(ADDRESSCLAIMS, claimName(address)),
            });
            return false;
          } catch {
            return true;
          }
        },
        { timeoutMs: 60_000 },
      );
    }
    console.log(`pinned race: winners by namespace ${JSON.stringify(winners)}`);
  });

  // On another node the replacement takes the address while the old pod still runs its preStop.
  // On the holder's own node one address cannot be on two veths: the replacement takes the claim
  // (so no other namespace can) and starts once the old pod's network is torn down.
  it.each([
    { to: 'another node', address: HANDOVER_MOVED, replacementNode: 1, preStopSeconds: 45 },
    { to: 'its own node', address: HANDOVER, replacementNode: 0, preStopSeconds: 15 },
  ])(
    'a holder being deleted (a long preStop) keeps its address from another namespace and passes it to its own replacement on $to; never two next hops',
    async ({ address, replacementNode, preStopSeconds }) => {
      const name = `handover-${replacementNode}`;
      const onNode = (i: number) => ({ 'kubernetes.io/hostname': lab.plans[i]!.name });
      const deployment = labDeployment({
        name,
        namespace: 'team-a',
        replicas: 1,
        annotations: { [PINNED_IP_ANNOTATION]: address },
        podSpec: { nodeSelector: onNode(0) },
      }) as {
        spec: {
          strategy?: object;
          template: { spec: Record<string, unknown> & { containers: Record<string, unknown>[] } };
        };
      };
      // One address, one pod: a rollout replaces the pod instead of surging beside it (with a
      // surge the new pod would wait for an address the old one keeps until the new one is Ready).
      deployment.spec.strategy = {
        type: 'RollingUpdate',
        rollingUpdate: { maxSurge: 0, maxUnavailable: 1 },
      };
      deployment.spec.template.spec.terminationGracePeriodSeconds = 60;
      deployment.spec.template.spec.containers[0]!.lifecycle = {
        preStop: { exec: { command: ['/bin/sh', '-c', `sleep ${preStopSeconds}`] } },
      };
      await lab.apply(DEPLOYMENTS, deployment);
      const [old] = await waitForReadyPods(lab, 'team-a', `app=${name}`, 1);
      expect(old!.status!.podIPs![0]!.ip).toBe(address);
      await eventually(
        'routed to the holder',
        async () =>
          JSON.stringify(await hops(address)) === JSON.stringify([nodeAddress(old!.spec.nodeName)]),
      );
      const watch = watchHops(address);
      let fresh: LabPod | undefined;
      try {
        // Its rollout: the old pod runs its preStop while the new one starts.
        if (replacementNode === 0)
          await labKubectl(lab, ['-n', 'team-a', 'rollout', 'restart', `deployment/${name}`]);
        else
          await labKubectl(lab, [
            ...['-n', 'team-a', 'patch', `deployment/${name}`, '--type=merge', '-p'],
            JSON.stringify({ spec: { template: { spec: { nodeSelector: onNode(1) } } } }),
          ]);
        await eventually('the old pod is being deleted', async () =>
          (await listPods(lab, 'team-a', `app=${name}`)).some(
            (p) =>
              p.metadata.name === old!.metadata.name &&
              p.metadata['deletionTimestamp'] !== undefined,
          ),
        );
        // Meanwhile another namespace asks for the address: refused.
        await lab.api!.request({
          method: 'POST',
          path: '/api/v1/namespaces/team-b/pods',
          body: barePod(`grabber-${replacementNode}`, 'team-b', lab.plans[2]!.name, {
            [PINNED_IP_ANNOTATION]: address,
          }),
        });
        const moved = replacementNode !== 0;
        fresh = await eventually(
          moved
            ? 'the replacement runs with the address while the old pod still terminates'
            : "the replacement runs with the address once the old pod's network is torn down",
          async () => {
            const pods = await listPods(lab, 'team-a', `app=${name}`);
            const n = pods.find(
              (p) =>
                p.metadata.name !== old!.metadata.name && p.status?.podIPs?.[0]?.ip === address,
            );
            return n && (!moved || pods.some((p) => p.metadata.name === old!.metadata.name))
              ? n
              : undefined;
          },
          { timeoutMs: moved ? 40_000 : 40_000 + preStopSeconds * 1000, intervalMs: 250 },
        );
        if (!moved)
          expect(
            (await events('team-a', 'FailedCreatePodSandBox')).find(
              (e) => e.pod === fresh!.metadata.name,
            )?.message,
          ).toContain('on this node still has it while it shuts down');
        expect(fresh.spec.nodeName).toBe(lab.plans[replacementNode]!.name);
        await eventually(
          'routed to the replacement',
          async () =>
            JSON.stringify(await hops(address)) ===
            JSON.stringify([nodeAddress(fresh!.spec.nodeName)]),
        );
        const refused = await eventually(
          'the other namespace is refused',
          async () =>
            (await events('team-b', 'FlockAddressRefused')).find(
              (e) => e.pod === `grabber-${replacementNode}`,
            )?.message,
        );
        expect(refused).toContain('claimed by another namespace');
        const grabber = (await listPods(lab, 'team-b', 'app=ownership')).find(
          (p) => p.metadata.name === `grabber-${replacementNode}`,
        );
        expect(grabber?.status?.podIPs ?? []).toEqual([]);
      } finally {
        await watch.stop();
        await deletePod('team-b', `grabber-${replacementNode}`);
        await lab.api!.request({
          method: 'DELETE',
          path: `/apis/apps/v1/namespaces/team-a/deployments/${name}`,
        });
        for (const p of await listPods(lab, 'team-a', `app=${name}`))
          await deletePod('team-a', p.metadata.name);
      }
      expect(watch.seen.filter((h) => h.length > 1)).toEqual([]);
    },
  );

  it('a Pool whose floating ranges overlap is refused, the message naming both ranges', async () => {
    const pool = samplePool() as {
      metadata: { name: string };
      spec: { nodeSelector?: object; anycast: { cidrs: string[] } };
    };
    pool.metadata.name = `${POOL_NAME}-overlap`;
    // Selects no node: were it accepted, it would change nothing of the lab.
    pool.spec.nodeSelector = { matchLabels: { 'flock-test/none': 'none' } };
    pool.spec.anycast.cidrs = ['2001:db8:200::/121'];
    const r = await labKubectl(lab, ['apply', '-f', '-'], {
      input: JSON.stringify(pool),
      okCodes: [0, 1],
    });
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/2001:db8:200::\/121/);
    expect(r.stderr).toMatch(/2001:db8:200::\/120/);
  });
});
