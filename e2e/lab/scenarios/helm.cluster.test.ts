// flock installed the way users install it, on the lab's real nodes: the agent and operator
// images built from images/*/Dockerfile, imported into each node's containerd, and
// `helm install flock charts/flock`. The agents (and BIRD) run as the chart's DaemonSet, the
// operator as its Deployment; no flock process runs outside a container.
import { access } from 'node:fs/promises';
import { join } from 'node:path';
import { NodeConfig } from '@flock/api';
import { NODECONFIGS, POOLS, objectPath } from '@flock/kube';
import { eventually } from '@flock/testkit';
import { describe, expect, it } from 'vitest';
import { CHART, FLOCK_NAMESPACE, RELEASE, helm, helmSet } from '../core/helm.js';
import {
  FLOCK_ARGV,
  containerProcesses,
  nodeProcesses,
  podProcesses,
  processPrivileges,
} from '../node/processes.js';
import { sampleDeployment } from '../core/plan.js';
import { RouterWatch } from '../probes/router-watch.js';
import { readState } from '../core/state.js';
import { probeFromRouter } from '../probes/status.js';
import {
  DEPLOYMENTS,
  labKubectl,
  listPods,
  waitForPods,
  waitForReadyPods,
  type LabPod,
} from '../core/workloads.js';
import { startLab } from '../core/test-lab.js';
import { peerRelayScenario } from '../probes/peer-relay.js';

const { lab, dir } = startLab({
  tmpPrefix: 'flock-lab-helm-',
  tools: ['bird', 'nsenter', 'flock-controlplane', 'kubectl', 'helm'],
  nodes: 2,
  install: 'helm',
});

describe('helm install onto real nodes', () => {
  it('every agent pod (agent and BIRD containers) and the operators are Ready; no flock process outside a container', async () => {
    const pods = await eventually(
      'the release running',
      async () => {
        const all = await listPods(lab, FLOCK_NAMESPACE, 'app.kubernetes.io/instance=flock');
        const ready = all.filter(allReady);
        // An agent and a BFD speaker a node, two operators.
        return ready.length === all.length && all.length === 6 ? all : undefined;
      },
      { timeoutMs: 180_000, intervalMs: 1_000 },
    );
    const agents = pods.filter((p) => p.metadata.name.startsWith('flock-agent-'));
    expect(new Set(agents.map((p) => p.spec.nodeName))).toEqual(
      new Set(lab.plans.map((p) => p.name)),
    );
    // Every flock process of every node is a container's: in the kubelet's kubepods tree, none
    // among the node's own daemons (its `system` cgroup).
    const isFlock = (argv: string[]) => FLOCK_ARGV.agent(argv) || FLOCK_ARGV.bird(argv);
    for (const node of lab.nodes) {
      expect(await nodeProcesses(node, 'system', isFlock)).toEqual([]);
      const inPods = await containerProcesses(node, isFlock);
      expect(inPods.some((p) => FLOCK_ARGV.agent(p.argv))).toBe(true);
      expect(inPods.some((p) => FLOCK_ARGV.bird(p.argv))).toBe(true);
    }
  });

  it('every NodeConfig is Ready; workloads get addresses of their node; the router learns and reaches them', async () => {
    for (const plan of lab.plans) {
      const nc = await eventually(
        `${plan.name}'s NodeConfig Ready`,
        async () => {
          const obj = NodeConfig.parse(
            await lab.api!.request({ method: 'GET', path: objectPath(NODECONFIGS, plan.name) }),
          );
          return obj.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True')
            ? obj
            : undefined;
        },
        { timeoutMs: 60_000 },
      );
      const routes = await lab.router!.routes();
      for (const prefix of [nc.spec.cidr6, nc.spec.cidr4])
        expect(routes.find((r) => r.prefix === prefix)?.via).toEqual([plan.node6]);
    }
    await lab.apply(DEPLOYMENTS, sampleDeployment(4));
    const pods = await waitForReadyPods(lab, 'default', 'app=web', 4);
    const state = (await readState(dir))!;
    for (const pod of pods)
      for (const { ip } of pod.status!.podIPs!)
        expect(await probeFromRouter(state, ip)).toEqual({ ok: true, reply: pod.metadata.name });
  });

  it('runs with least privilege: the capabilities, user, root file system and mounts the running containers have', async () => {
    const expectedAgentMounts = [
      '/etc/flock',
      '/host/proc/sys/net',
      '/run/bird',
      '/run/flock',
      '/run/netns',
      '/tmp',
    ];
    for (const node of lab.nodes) {
      const [agent] = await containerProcesses(node, FLOCK_ARGV.agent);
      const [bird] = await containerProcesses(node, FLOCK_ARGV.bgpBird);
      const [bfd] = await containerProcesses(node, FLOCK_ARGV.bfdBird);
      expect(agent && bird && bfd, `agent, BIRD and BFD speaker on ${node.plan.name}`).toBeTruthy();
      // The BFD speaker: BIRD for BFD only, NET_ADMIN (socket priority), no API token, one mount.
      const speaker = await processPrivileges(bfd!.pid);
      expect(speaker).toMatchObject({ capabilities: ['NET_ADMIN'], uid: 0, readOnlyRoot: true });
      expect(
        speaker.mountPoints.filter(
          (m) =>
            m !== '/' &&
            !/^\/(proc|dev|sys)(\/|$)/.test(m) &&
            !['/etc/hosts', '/etc/hostname', '/etc/resolv.conf'].includes(m),
        ),
      ).toEqual(['/run/flock/bfd']);
      const a = await processPrivileges(agent!.pid);
      expect(a).toMatchObject({
        capabilities: ['NET_ADMIN', 'SYS_ADMIN'],
        uid: 0,
        readOnlyRoot: true,
      });
      // What the agent container sees of the node: its volumes, nothing else (the runtime's own
      // /proc, /dev, /sys, /etc/hosts... and the ServiceAccount token aside; /run/netns holds
      // the pods' namespace files, propagated from the node).
      const own = a.mountPoints.filter(
        (m) =>
          m !== '/' &&
          !/^\/(proc|dev|sys)(\/|$)/.test(m) &&
          !['/etc/hosts', '/etc/hostname', '/etc/resolv.conf'].includes(m) &&
          !/^(\/var)?\/run\/secrets\/kubernetes\.io\//.test(m) &&
          !m.startsWith('/run/netns/'),
      );
      expect([...new Set(own)].sort()).toEqual([...expectedAgentMounts, '/var/lib/flock'].sort());
      // Through that mount the agent hardened each pod veth it made (the container's /proc/sys
      // is read-only).
      const links = JSON.parse((await node.ns.enter('ip', ['-j', 'link', 'show'])).stdout) as {
        ifname: string;
      }[];
      const veths = links.map((l) => l.ifname).filter((n) => /^flock[0-9a-f]{8}$/.test(n));
      expect(veths.length, `pod veths on ${node.plan.name}`).toBeGreaterThan(0);
      for (const veth of veths)
        for (const key of [
          `net.ipv6.conf.${veth}.accept_ra`,
          `net.ipv4.conf.${veth}.accept_redirects`,
        ])
          expect((await node.ns.enter('sysctl', ['-n', key])).stdout.trim(), key).toBe('0');
      expect(await processPrivileges(bird!.pid)).toMatchObject({
        capabilities: ['NET_ADMIN', 'NET_BIND_SERVICE'],
        readOnlyRoot: true,
      });
    }
    const operators = (
      await Promise.all(lab.nodes.map((n) => containerProcesses(n, FLOCK_ARGV.operator)))
    ).flat();
    expect(operators).toHaveLength(2);
    for (const op of operators)
      expect(await processPrivileges(op.pid)).toMatchObject({
        capabilities: [],
        uid: 65532,
        readOnlyRoot: true,
      });
    // Secrets: with no bgpPasswordSecrets named (the default), the agent may read none.
    expect(await agentMay('get', 'secrets')).toBe(false);
    expect(await agentMay('get', 'secrets/bgp-tor')).toBe(false);
  });

  it('helm upgrade rolls the agents while the workloads serve: no failed probe, no address re-allocated, no route withdrawn', async () => {
    const before = await waitForReadyPods(lab, 'default', 'app=web', 4);
    const oldAgents = new Set((await agentPods()).map((p) => p.metadata.uid));
    const ips = before.flatMap((p) => p.status!.podIPs!.map((i) => i.ip));
    const watch = RouterWatch.start(lab.router!, ips);
    let result;
    try {
      await eventually('the prober running', async () => watch.probed() || undefined, {
        timeoutMs: 10_000,
      });
      // The installed release, its values kept but these.
      await helm(lab.cp!.kubeconfigPath, [
        ...['upgrade', RELEASE, CHART, '--reuse-values'],
        ...helmSet(['agent.logLevel=debug', 'agent.bgpPasswordSecrets={bgp-tor}']),
      ]);
      await eventually(
        'every agent pod replaced and Ready, and every node session Established again',
        async () => {
          const pods = await agentPods();
          const fresh = pods.filter((p) => !oldAgents.has(p.metadata.uid) && allReady(p));
          const sessions = await lab.router!.sessions();
          if (fresh.length !== lab.nodes.length || pods.length !== lab.nodes.length)
            throw new Error(
              `${fresh.length} of ${pods.length} agent pods new and Ready: ${pods
                .map(
                  (p) =>
                    `${p.metadata.name} ${JSON.stringify(p.status?.containerStatuses?.map((c) => [c.name, c.ready]))}`,
                )
                .join('; ')}`,
            );
          if (![...sessions.values()].every((s) => s === 'Established'))
            throw new Error(`router sessions ${JSON.stringify([...sessions])}`);
          return true;
        },
        { timeoutMs: 240_000, intervalMs: 1_000 },
      );
      // Past the new BIRDs' graceful-restart recovery (their End-of-RIB): routes they did not
      // send again would be removed now.
      await new Promise((r) => setTimeout(r, 5_000));
    } finally {
      result = await watch.stop();
    }
    console.log(
      `probes during the roll: ${Object.entries(result.summary)
        .map(([t, c]) => `${t} ${c.ok} ok/${c.failed} failed`)
        .join(', ')}`,
    );
    expect(result.failures).toEqual([]);
    for (const c of Object.values(result.summary)) expect(c.ok).toBeGreaterThan(20);
    expect(result.deleted).toEqual([]);
    const after = await waitForReadyPods(lab, 'default', 'app=web', 4);
    const addresses = (pods: LabPod[]) =>
      Object.fromEntries(pods.map((p) => [p.metadata.name, p.status!.podIPs!.map((i) => i.ip)]));
    expect(addresses(after)).toEqual(addresses(before));
    // The upgrade's other value: the agent may now read that one Secret, and no other.
    expect(await agentMay('get', 'secrets/bgp-tor')).toBe(true);
    expect(await agentMay('get', 'secrets/other')).toBe(false);
  }, 420_000);

  it('the operator with 2 replicas: the leader killed, the other takes over and reconciles a new Pool', async () => {
    const holder = await leaseHolder();
    const operators = await listPods(lab, FLOCK_NAMESPACE, OPERATOR_SELECTOR);
    const leader = operators.find((p) => holder.startsWith(`${p.metadata.name}_`));
    const standby = operators.find((p) => p !== leader);
    expect(leader && standby, `leader ${holder} among ${operators.length} operators`).toBeTruthy();
    const node = lab.nodes.find((n) => n.plan.name === leader!.spec.nodeName)!;
    // The leader's own process: both replicas may run on one node.
    const [proc] = await podProcesses(node, leader!.metadata.uid!, FLOCK_ARGV.operator);
    expect(proc, `the process of ${leader!.metadata.name}`).toBeDefined();
    process.kill(proc!.pid, 'SIGKILL');
    const killedAt = Date.now();
    // The kubelet restarts the killed container at once, and once the Lease expires its new
    // process and the standby race for it: either may win. The leader keeps dying until the
    // standby holds the Lease, so what is tested is the standby's takeover.
    await eventually(
      'the standby holding the Lease',
      async () => {
        if ((await leaseHolder()).startsWith(`${standby!.metadata.name}_`)) return true;
        for (const p of await podProcesses(node, leader!.metadata.uid!, FLOCK_ARGV.operator)) {
          try {
            process.kill(p.pid, 'SIGKILL');
          } catch {
            /* gone meanwhile */
          }
        }
        return undefined;
      },
      { timeoutMs: 90_000, intervalMs: 500 },
    );
    console.log(`operator takeover ${Date.now() - killedAt} ms after the leader was killed`);
    await lab.apply(POOLS, {
      apiVersion: 'flock.fritzlab.net/v1alpha1',
      kind: 'Pool',
      metadata: { name: 'after-failover' },
      spec: {
        nodeSelector: { matchLabels: { 'flock.test/none': 'true' } },
        ipv6: { cidr: '2001:db8:900::/56', nodePrefixLength: 64 },
        bgp: { asn: 64512, peers: [{ address: '2001:db8:ffff::1', asn: 65000 }] },
      },
    });
    await eventually(
      'the new Pool reconciled by the new leader',
      async () => {
        const pool = (await lab.api!.request({
          method: 'GET',
          path: objectPath(POOLS, 'after-failover'),
        })) as {
          metadata: { generation: number };
          status?: { conditions?: { type: string; status: string; observedGeneration?: number }[] };
        };
        const ready = pool.status?.conditions?.find((c) => c.type === 'Ready');
        return ready?.status === 'True' && ready.observedGeneration === pool.metadata.generation
          ? true
          : undefined;
      },
      { timeoutMs: 60_000, intervalMs: 500 },
    );
  });

  it('the peer relay (helm upgrade): agents read peers from it, watch the PeerSlices while it is gone, and a NetworkPolicy follows a label change across nodes throughout', async () => {
    const oldAgents = new Set((await agentPods()).map((p) => p.metadata.uid!));
    await peerRelayScenario(lab, oldAgents);
  });

  it('helm uninstall removes what docs/install.md says and leaves the rest, pods still served', async () => {
    const pods = await waitForPods(lab, 'default', 'app=web', 4);
    // Waiting for the release's pods to be gone.
    const wait = ['--wait', '--timeout', '120s'];
    await helm(lab.cp!.kubeconfigPath, ['uninstall', RELEASE, ...wait], 180_000);
    // Gone: the workloads, the accounts and their RBAC.
    for (const [kind, name] of [
      ['daemonset', 'flock-agent'],
      ['daemonset', 'flock-bfd'],
      ['deployment', 'flock-operator'],
      ['deployment', 'flock-peer-relay'],
      ['serviceaccount', 'flock-peer-relay'],
      ['clusterrole', 'flock-peer-relay'],
      ['secret', 'flock-peer-relay-tls'],
      ['serviceaccount', 'flock-agent'],
      ['serviceaccount', 'flock-operator'],
      ['clusterrole', 'flock-agent'],
      ['clusterrole', 'flock-operator'],
      ['role', 'flock-agent-bgp-secrets'],
    ] as const) {
      const r = await labKubectl(lab, [
        ...['get', kind, name, '-n', FLOCK_NAMESPACE, '--ignore-not-found', '-o', 'name'],
      ]);
      expect(r.stdout.trim(), `${kind}/${name} left behind`).toBe('');
    }
    await eventually(
      'the release’s pods gone',
      async () =>
        (await listPods(lab, FLOCK_NAMESPACE, 'app.kubernetes.io/instance=flock')).length === 0 ||
        undefined,
      { timeoutMs: 60_000, intervalMs: 500 },
    );
    // Kept: the CRDs (the ClusterNetworkPolicy one by its resource policy), the Pools and the
    // NodeConfigs.
    await labKubectl(lab, [
      'get',
      'crd',
      'pools.flock.fritzlab.net',
      'nodeconfigs.flock.fritzlab.net',
      'addressclaims.flock.fritzlab.net',
      'clusternetworkpolicies.policy.networking.k8s.io',
    ]);
    await lab.api!.request({ method: 'GET', path: objectPath(POOLS, 'lab') });
    for (const plan of lab.plans)
      await lab.api!.request({ method: 'GET', path: objectPath(NODECONFIGS, plan.name) });
    // Kept on every node: the plugin, its configuration, Node.js, the allocation store and
    // the nftables table.
    for (const node of lab.nodes) {
      for (const f of [
        'cni-conf/10-flock.conflist',
        'cni-bin/flock',
        'cni-bin/flock.mjs',
        'opt-flock/bin/node',
        'var-lib-flock/allocations.json',
      ])
        await access(join(node.dir, f));
      const tables = await node.ns.enter('nft', ['list', 'tables']);
      expect(tables.stdout).toContain('table inet flock');
    }
    // The pods keep their addresses and their routes on the node. What the router does is a
    // race (docs/install.md): BIRD's graceful stop makes it keep the routes as stale, unless a
    // BFD speaker's silence is noticed first, which withdraws them; so it is not asserted.
    for (const pod of pods) {
      const node = lab.node(pod.spec.nodeName!);
      for (const { ip } of pod.status!.podIPs!) {
        const route = await node.ns.enter('ip', [
          ip.includes(':') ? '-6' : '-4',
          'route',
          'show',
          ip,
        ]);
        expect(route.stdout, `${ip} routed on its node`).toMatch(/dev flock/);
      }
    }
  });
});

const OPERATOR_SELECTOR = 'app.kubernetes.io/name=flock-operator';

const agentPods = () => listPods(lab, FLOCK_NAMESPACE, 'app.kubernetes.io/name=flock-agent');

const allReady = (p: LabPod) =>
  (p.status?.containerStatuses ?? []).length > 0 &&
  (p.status?.containerStatuses ?? []).every((c) => c.ready === true);

async function leaseHolder(): Promise<string> {
  const lease = (await lab.api!.request({
    method: 'GET',
    path: `/apis/coordination.k8s.io/v1/namespaces/${FLOCK_NAMESPACE}/leases/flock-operator`,
  })) as { spec: { holderIdentity?: string } };
  return lease.spec.holderIdentity ?? '';
}

/** `kubectl auth can-i` as the agent's ServiceAccount. */
async function agentMay(verb: string, resource: string): Promise<boolean> {
  const r = await labKubectl(
    lab,
    [
      ...['auth', 'can-i', verb, resource, '-n', FLOCK_NAMESPACE],
      `--as=system:serviceaccount:${FLOCK_NAMESPACE}:flock-agent`,
    ],
    { okCodes: [0, 1] },
  );
  return r.code === 0;
}
