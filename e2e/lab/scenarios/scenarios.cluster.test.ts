// End-to-end scenarios 2, 4 and 5 on the whole lab with every sample applied (what `npm run lab`
// runs), and the lab's security checks (docs/reliability.md): anycast ECMP on the router and
// multipath on a node, readiness withdrawing an anycast path; BIRD killed and restarted under
// a living agent, the agent restarted under a living BIRD without a route flap; NetworkPolicy
// between pods of different nodes; no pod announcing what it does not own; no spoofing.
import { setTimeout as delay } from 'node:timers/promises';
import { ANYCAST_ANNOTATION, PINNED_IP_ANNOTATION } from '@flock/api';
import { eventually } from '@flock/testkit';
import { describe, expect, it } from 'vitest';
import { labDeployment, ROUTER_ID6, SAMPLE_ANYCAST6, SAMPLE_PINNED6 } from '../core/plan.js';
import { podAddresses, probeFrom, probeFromRouter } from '../probes/status.js';
import {
  applySamples,
  DEPLOYMENTS,
  execInPod,
  listPods,
  labService,
  podNetns,
  serviceIp,
  SERVICES,
  setReady,
  waitForPods,
} from '../core/workloads.js';
import { readState } from '../core/state.js';
import { hopFlaps, routeChanges, untilQuiet } from '../probes/route-events.js';
import { startLab } from '../core/test-lab.js';

const nodeAddress = (nodeName: string | undefined) =>
  lab.plans.find((p) => p.name === nodeName)!.node6;
const hops = (prefix: string) => lab.router!.nextHops(prefix);
const waitForHops = (prefix: string, want: string[], timeoutMs = 20_000) =>
  eventually(
    `router next hops of ${prefix} = ${want.join(', ') || 'none'}`,
    async () => JSON.stringify(await hops(prefix)) === JSON.stringify([...want].sort()),
    { timeoutMs, intervalMs: 200 },
  );

/** Warning Events with `reason` on pods of `namespace` whose name starts with `prefix`. */
async function podEvents(namespace: string, prefix: string, reason: string): Promise<string[]> {
  const list = (await lab.api!.request({
    method: 'GET',
    path: `/api/v1/namespaces/${namespace}/events`,
  })) as { items: { reason?: string; message?: string; involvedObject?: { name?: string } }[] };
  return list.items
    .filter((e) => e.reason === reason && e.involvedObject?.name?.startsWith(prefix))
    .map((e) => e.message ?? '');
}

const { lab, dir } = startLab({
  tmpPrefix: 'flock-lab-it-',
  tools: ['bird', 'nsenter', 'flock-controlplane', 'kubectl'],
  nodes: 3,
  setup: (lab) => applySamples(lab, 3),
});

describe('the samples', () => {
  it('every sample pod answers from the router on each of its public addresses', async () => {
    const state = (await readState(dir))!;
    const pods = await podAddresses(state);
    // 3 web, 2 anycast, 1 pinned, shop, frontend, outsider; IPv6 and IPv4 each.
    expect(pods).toHaveLength(9);
    for (const pod of pods) {
      expect(pod.ips).toHaveLength(2);
      const name = pod.pod.split('/')[1];
      for (const ip of pod.ips)
        expect(await probeFromRouter(state, ip)).toEqual({ ok: true, reply: name });
    }
  });

  it('the pinned pod has its pinned address, announced by its node only', async () => {
    const [pinned] = await waitForPods(lab, 'default', 'app=pinned', 1);
    expect(pinned!.status!.podIPs![0]!.ip).toBe(SAMPLE_PINNED6);
    await waitForHops(`${SAMPLE_PINNED6}/128`, [nodeAddress(pinned!.spec.nodeName)]);
  });
});

describe('scenario 2: anycast', () => {
  it('replicas on two nodes: the router has two equal paths and reaches a replica', async () => {
    const pods = await waitForPods(lab, 'default', 'app=anycast', 2);
    const nodes = pods.map((p) => nodeAddress(p.spec.nodeName));
    expect(new Set(nodes).size).toBe(2);
    await waitForHops(`${SAMPLE_ANYCAST6}/128`, nodes);
    const state = (await readState(dir))!;
    const r = await probeFromRouter(state, SAMPLE_ANYCAST6);
    expect(pods.map((p) => p.metadata.name)).toContain(r.reply);
  });

  it('a replica whose readiness probe fails is withdrawn, and comes back when it passes', async () => {
    const [a, b] = await waitForPods(lab, 'default', 'app=anycast', 2);
    await setReady(lab, a!, false);
    await waitForHops(`${SAMPLE_ANYCAST6}/128`, [nodeAddress(b!.spec.nodeName)]);
    await setReady(lab, a!, true);
    await waitForHops(
      `${SAMPLE_ANYCAST6}/128`,
      [a!, b!].map((p) => nodeAddress(p.spec.nodeName)),
    );
  });

  it('two replicas on one node: a multipath host route there, one path on the router', async () => {
    const address = '2001:db8:300::54';
    const node = lab.plans[2]!;
    await lab.apply(
      DEPLOYMENTS,
      labDeployment({
        name: 'pair',
        replicas: 2,
        annotations: { [ANYCAST_ANNOTATION]: address },
        podSpec: { nodeSelector: { 'kubernetes.io/hostname': node.name } },
      }),
    );
    await waitForPods(lab, 'default', 'app=pair', 2);
    const labNode = lab.node(node.name);
    const nexthops = await eventually('a two-way multipath route on the node', async () => {
      const { stdout } = await labNode.ns.enter('ip', ['-j', '-6', 'route', 'show', address]);
      const [route] = JSON.parse(stdout) as { nexthops?: { dev: string }[] }[];
      return route?.nexthops?.length === 2 ? route.nexthops : undefined;
    });
    expect(nexthops.every((h) => h.dev.startsWith('flock'))).toBe(true);
    await waitForHops(`${address}/128`, [node.node6]);
  });
});

describe('scenario 5: NetworkPolicy across nodes', () => {
  it('shop lets in frontend (another namespace, another node) and keeps outsider out', async () => {
    const [shop] = await waitForPods(lab, 'shop', 'app=shop', 1);
    const [frontend] = await waitForPods(lab, 'frontend', 'app=frontend', 1);
    const [outsider] = await waitForPods(lab, 'outsider', 'app=outsider', 1);
    // The samples spread these three over the three nodes (soft anti-affinity).
    expect(new Set([shop, frontend, outsider].map((p) => p!.spec.nodeName)).size).toBe(3);
    const fromFrontend = await podNetns(lab, frontend!);
    const fromOutsider = await podNetns(lab, outsider!);
    for (const { ip } of shop!.status!.podIPs!) {
      expect(await probeFrom(fromFrontend, ip)).toEqual({ ok: true, reply: shop!.metadata.name });
      expect((await probeFrom(fromOutsider, ip)).ok).toBe(false);
    }
    // Without a policy, outsider reaches web pods everywhere.
    const web = await waitForPods(lab, 'default', 'app=web', 3);
    for (const w of web) {
      const r = await probeFrom(fromOutsider, w.status!.podIPs![0]!.ip);
      expect(r).toEqual({ ok: true, reply: w.metadata.name });
    }
  });
});

describe('Services: kube-proxy (nftables) beside flock', () => {
  it('a pod reaches the web pods through a ClusterIP Service, and a pod reaches itself through its own (hairpin)', async () => {
    await lab.apply(SERVICES, labService('web', 'web'));
    await lab.apply(SERVICES, labService('pinned', 'pinned'));
    const web = await waitForPods(lab, 'default', 'app=web', 3);
    const [outsider] = await waitForPods(lab, 'outsider', 'app=outsider', 1);
    const [pinned] = await waitForPods(lab, 'default', 'app=pinned', 1);
    const webIp = await serviceIp(lab, 'web');
    // IPv6 first: the Service's family is the cluster's primary one.
    expect(webIp).toContain(':');
    const from = await podNetns(lab, outsider!);
    const answered = await eventually(
      'the web Service answers (kube-proxy has its endpoints)',
      async () => {
        const r = await probeFrom(from, webIp, 80);
        return r.ok ? r.reply : undefined;
      },
      { timeoutMs: 30_000, intervalMs: 500 },
    );
    expect(web.map((p) => p.metadata.name)).toContain(answered);
    // Hairpin: the pinned pod's only endpoint is itself.
    const pinnedIp = await serviceIp(lab, 'pinned');
    const self = await podNetns(lab, pinned!);
    const hairpin = await eventually(
      'the pinned pod reaches itself through its Service',
      async () => {
        const r = await probeFrom(self, pinnedIp, 80);
        return r.ok ? r.reply : undefined;
      },
      { timeoutMs: 30_000, intervalMs: 500 },
    );
    expect(hairpin).toBe(pinned!.metadata.name);
    // Both tables are there, each owned by its program.
    const { stdout } = await lab.node(pinned!.spec.nodeName!).ns.enter('nft', ['list', 'tables']);
    expect(stdout).toContain('table ip6 kube-proxy');
    expect(stdout).toMatch(/table inet flock/);
  });
});

describe('security in the lab', () => {
  it('a pod cannot announce anycast outside the ranges or another pod pinned address', async () => {
    const [pinned] = await waitForPods(lab, 'default', 'app=pinned', 1);
    // Both on one node: a refused pod must not hold up the next one (the kubelet retries each
    // pod's sandbox on its own).
    const podSpec = { nodeSelector: { 'kubernetes.io/hostname': lab.plans[0]!.name } };
    await lab.apply(
      DEPLOYMENTS,
      labDeployment({
        name: 'rogue-anycast',
        replicas: 1,
        annotations: { [ANYCAST_ANNOTATION]: '2001:db8:999::1' },
        podSpec,
      }),
    );
    await lab.apply(
      DEPLOYMENTS,
      labDeployment({
        name: 'hijack',
        replicas: 1,
        annotations: { [PINNED_IP_ANNOTATION]: SAMPLE_PINNED6 },
        podSpec,
      }),
    );
    const refused = await eventually(
      'both refused with an Event',
      async () => {
        const a = await podEvents('default', 'rogue-anycast', 'FlockAddressRefused');
        const b = await podEvents('default', 'hijack', 'FlockAddressRefused');
        if (a.length && b.length) return [a[0], b[0]];
        // Not yet: say where things stand, for the timeout message.
        const pods = [
          ...(await listPods(lab, 'default', 'app=rogue-anycast')),
          ...(await listPods(lab, 'default', 'app=hijack')),
        ].map((p) => `${p.metadata.name}@${p.spec.nodeName ?? '-'}:${p.status?.phase ?? '-'}`);
        const unscheduled = await podEvents('default', 'hijack', 'FailedScheduling');
        throw new Error(
          `Events: rogue-anycast ${a.length}, hijack ${b.length}; pods ${pods.join(',')}; ${unscheduled.join(',')}`,
        );
      },
      { timeoutMs: 30_000 },
    );
    expect(refused[0]).toContain("outside this node's anycast ranges");
    // Same namespace, another workload (key): the holder is named, the key explained.
    expect(refused[1]).toContain(`pinned address ${SAMPLE_PINNED6}: it is held by pod pinned-`);
    expect(await lab.router!.learned()).not.toContain('2001:db8:999::1/128');
    expect(await hops(`${SAMPLE_PINNED6}/128`)).toEqual([nodeAddress(pinned!.spec.nodeName)]);
    for (const name of ['rogue-anycast', 'hijack']) {
      const pods = await listPods(lab, 'default', `app=${name}`);
      expect(pods.map((p) => p.status?.phase)).toEqual(['Pending']);
      await lab.api!.request({
        method: 'DELETE',
        path: `/apis/apps/v1/namespaces/default/deployments/${name}`,
      });
    }
  });

  it('a pod sending with a forged source address is dropped at its node', async () => {
    const [web] = await waitForPods(lab, 'default', 'app=web', 3);
    const inPod = (file: string, args: string[]) =>
      execInPod(lab, web!, file, args, { okCodes: [0, 1] });
    const real = web!.status!.podIPs![0]!.ip;
    const forged = '2001:db8:100:ff::dead';
    await inPod('ip', ['-6', 'addr', 'add', `${forged}/128`, 'dev', 'eth0', 'nodad']);
    // Count what reaches the router from each source (the router's own namespace).
    const router = lab.router!.ns;
    await router.exec('nft', ['add', 'table', 'inet', 'spoofcheck']);
    await router.exec('nft', [
      'add chain inet spoofcheck pre { type filter hook prerouting priority -300; }',
    ]);
    for (const src of [real, forged])
      await router.exec('nft', [`add rule inet spoofcheck pre ip6 saddr ${src} counter`]);
    for (const src of [real, forged])
      await inPod('ping', ['-6', '-c', '3', '-i', '0.2', '-W', '1', '-I', src, ROUTER_ID6]);
    await delay(500);
    const { stdout } = await router.exec('nft', [
      '-j',
      'list',
      'chain',
      'inet',
      'spoofcheck',
      'pre',
    ]);
    const counts = (
      JSON.parse(stdout) as {
        nftables: {
          rule?: { expr: { match?: { right?: string }; counter?: { packets: number } }[] };
        }[];
      }
    ).nftables
      .flatMap((o) => (o.rule ? [o.rule.expr] : []))
      .map((expr) => ({
        src: expr.find((e) => e.match)?.match?.right,
        packets: expr.find((e) => e.counter)?.counter?.packets,
      }));
    expect(counts).toEqual([
      { src: real, packets: 3 },
      { src: forged, packets: 0 },
    ]);
    await inPod('ip', ['-6', 'addr', 'del', `${forged}/128`, 'dev', 'eth0']);
  });
});

describe('scenario 4: BIRD and agent restarts', () => {
  it('BIRD killed and restarted (bird -R): the BFD speaker keeps BFD up, the router deletes no route of the node, the agent untouched', async () => {
    const plan = lab.plans[0]!;
    const node = lab.node(plan.name);
    const agentPid = node.agent!.child.pid;
    const before = (await lab.router!.routes()).filter((r) => r.via.includes(plan.node6));
    expect(before.length).toBeGreaterThanOrEqual(2);
    const monitor = lab.router!.monitorRoutes();
    await delay(500);
    try {
      node.killBird();
      await eventually(
        'the router session to the node is down (bridged as a graceful restart)',
        async () => (await lab.router!.sessions()).get(plan.routerIf) !== 'Established',
        { timeoutMs: 30_000 },
      );
      expect(await lab.router!.bfdState(plan.node6)).toBe('Up');
      await node.startBird(30_000, true);
      await eventually(
        'the session is back and its graceful restart over, with every route',
        async () => {
          if (!(await lab.router!.recovered(plan.routerIf))) return false;
          const now = (await lab.router!.routes()).filter((r) => r.via.includes(plan.node6));
          return JSON.stringify(now) === JSON.stringify(before);
        },
        { timeoutMs: 60_000 },
      );
    } finally {
      monitor.stop();
    }
    expect(monitor.lines.filter((l) => l.startsWith('Deleted') && l.includes(plan.node6))).toEqual(
      [],
    );
    expect(node.agent!.child.pid).toBe(agentPid);
    expect(node.agent!.child.exitCode).toBeNull();
  });

  it('the agent restarted while BIRD stays: no route of the node flaps on the router', async () => {
    const plan = lab.plans[1]!;
    const node = lab.node(plan.name);
    const monitor = lab.router!.monitorRoutes();
    let from = 0;
    let before: { prefix: string; via: string[] }[] = [];
    try {
      // What the tests before this one changed may still be reaching the router (a graceful
      // restart's end rewrites the multipath routes it shares): start from a quiet table.
      await untilQuiet(monitor.lines);
      before = (await lab.router!.routes()).filter((r) => r.via.includes(plan.node6));
      from = monitor.lines.length;
      await node.restartAgent();
      // The restarted agent's start-up sweep, BIRD render and first resync (--resync 5s).
      await delay(6_000);
    } finally {
      monitor.stop();
    }
    // A multipath route prints every member on any member's change: count only the changes
    // that take this node's next hop away or bring it (back).
    const seen = monitor.lines.slice(from);
    expect(hopFlaps(before, routeChanges(seen), plan.node6), seen.join('\n')).toEqual([]);
    expect((await lab.router!.routes()).filter((r) => r.via.includes(plan.node6))).toEqual(before);
  });
});
