// The chart on the real control plane: helm install (every object, CRDs established), then the
// real operator and agent processes run with tokens minted for the chart's own ServiceAccounts
// and must do their whole job — a permission missing from the chart fails here — while
// `kubectl auth can-i` shows they can do no more. Then helm upgrade and helm uninstall. There
// is no kubelet: the Deployment's and DaemonSet's pods never start; the test runs the processes.
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { NODECONFIGS, POOLS, objectPath, HttpTransport } from '@flock/kube';
import {
  Netns,
  eventually,
  helm,
  kubectl,
  requireKernelTier,
  startControlPlane,
  waitForCrds,
  type ControlPlane,
} from '@flock/testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startChartAgent, wirePod } from './chart-agent.js';
import { stopDaemon, type Daemon } from '../shared/daemon.js';
import { Read, mintAgentToken, startUntil } from './cluster-support.js';
import {
  CHECKS,
  canI,
  documentedTable,
  renderTable,
  tableCells,
  writeDocumentedTable,
} from './can-i.js';
import {
  CHART,
  NAMESPACE,
  RELEASE,
  REPO,
  TESTDATA,
  UPDATE,
  container,
  parseObjects,
  podSpec,
  type K8sObject,
} from './support.js';

const NODE = 'node-a';
const OPERATOR_MAIN = join(REPO, 'packages', 'operator', 'dist', 'src', 'main.js');

let cp: ControlPlane;
let admin: HttpTransport;
let dir: string;
let nodeNs: Netns | undefined;
let podNs: Netns | undefined;
let operator: Daemon | undefined;
let agent: Daemon | undefined;
const tokens: Record<'operator' | 'agent', string> = { operator: '', agent: '' };

const get = async (path: string) => Read.parse(await admin.request({ method: 'GET', path }));

const manifest = async () =>
  parseObjects(
    (await helm(cp.kubeconfigPath, ['get', 'manifest', RELEASE, '-n', NAMESPACE])).stdout,
  );

beforeAll(async () => {
  requireKernelTier('flock-controlplane', 'helm', 'kubectl', 'nsenter', 'nft');
  cp = await startControlPlane();
  admin = new HttpTransport(cp.kubeConfig);
  dir = await mkdtemp(join(tmpdir(), 'flock-chart-'));
}, 300_000);

afterAll(async () => {
  await stopDaemon(agent);
  await stopDaemon(operator);
  await podNs?.destroy();
  await nodeNs?.destroy();
  await cp?.stop();
  if (dir) await rm(dir, { recursive: true, force: true });
});

describe('the flock chart on a real API server', () => {
  it('helm install creates every object and establishes the CRDs', async () => {
    await helm(
      cp.kubeconfigPath,
      [
        'install',
        RELEASE,
        CHART,
        '-n',
        NAMESPACE,
        '--create-namespace',
        '-f',
        join(TESTDATA, 'cluster-values.yaml'),
      ],
      { timeoutMs: 120_000 },
    );
    await waitForCrds(cp.kubeconfigPath, [
      'pools.flock.fritzlab.net',
      'nodeconfigs.flock.fritzlab.net',
      'addressclaims.flock.fritzlab.net',
      'clusternetworkpolicies.policy.networking.k8s.io',
    ]);
    const objects = await manifest();
    // The 16 default objects (the BFD speaker's DaemonSet, the dashboard and CNI ConfigMaps among
    // them), the ClusterNetworkPolicy CRD and the sample Pool.
    expect(objects.length).toBe(20);
    for (const o of objects) {
      const ns = o.metadata.namespace ? ['-n', o.metadata.namespace] : [];
      const kind =
        `${o.kind}.${o.apiVersion.includes('/') ? o.apiVersion.split('/')[0] : ''}`.replace(
          /\.$/,
          '',
        );
      await kubectl(cp.kubeconfigPath, ['get', kind, o.metadata.name, ...ns, '-o', 'name']);
    }
    const status = await helm(cp.kubeconfigPath, ['status', RELEASE, '-n', NAMESPACE]);
    expect(status.stdout).toMatch(/STATUS: deployed/);
    expect(status.stdout).toContain('kubectl get nodeconfigs'); // NOTES.txt
  });

  it('the operator, with its ServiceAccount token only, writes the NodeConfig and Pool status', async () => {
    const sa = await cp.mintServiceAccount(NAMESPACE, 'flock-operator');
    tokens.operator = sa.path;
    await admin.request({
      method: 'POST',
      path: '/api/v1/nodes',
      body: { apiVersion: 'v1', kind: 'Node', metadata: { name: NODE } },
    });
    const deploy = podSpec(await manifest(), 'Deployment', 'flock-operator');
    const args = container(deploy.containers, 'operator').args ?? [];
    operator = await startUntil(
      process.execPath,
      [
        OPERATOR_MAIN,
        ...args,
        '--kubeconfig',
        sa.path,
        '--health-port=0',
        '--lease-duration=4s',
        '--renew-deadline=3s',
        '--retry-period=1s',
      ],
      { POD_NAME: 'flock-operator-test', POD_NAMESPACE: NAMESPACE },
      /became leader/,
    );
    const nc = await eventually('NodeConfig node-a', () => get(objectPath(NODECONFIGS, NODE)), {
      timeoutMs: 30_000,
    });
    expect(nc.spec).toMatchObject({
      pool: 'sample',
      cidr6: '2001:db8:100::/64',
      cidr4: '192.0.2.0/28',
    });
    const pool = await eventually(
      'Pool status Ready',
      async () => {
        const p = await get(objectPath(POOLS, 'sample'));
        const ready = p.status.conditions.find((c) => c.type === 'Ready');
        return ready?.status === 'True' ? p : undefined;
      },
      { timeoutMs: 30_000 },
    );
    expect(pool.status).toMatchObject({ nodes: 1 });
    const lease = await get(
      `/apis/coordination.k8s.io/v1/namespaces/${NAMESPACE}/leases/flock-operator`,
    );
    expect(lease.spec['holderIdentity']).toMatch(/^flock-operator-test_/);
    const events = await get('/apis/events.k8s.io/v1/namespaces/default/events');
    expect(events.items.map((e) => e.reason)).toContain('PrefixAssigned');
    expect(operator.logs.filter((l) => /forbidden/i.test(l))).toEqual([]);
  }, 120_000);

  it('the agent, with its ServiceAccount token only, serves CNI ADD/DEL and writes status', async () => {
    const sa = await mintAgentToken(cp, admin, NODE);
    tokens.agent = sa.path;
    // The BGP password Secret the sample Pool's peer names (read by the agent with `get`).
    await admin.request({
      method: 'POST',
      path: `/api/v1/namespaces/${NAMESPACE}/secrets`,
      body: { metadata: { name: 'bgp-tor' }, stringData: { password: 'flock-test-pw' } },
    });
    nodeNs = await Netns.create('chart');
    const started = await startChartAgent({
      objects: await manifest(),
      kubeconfig: sa.path,
      nodeName: NODE,
      namespace: NAMESPACE,
      nodeNs,
      dir,
    });
    agent = started.daemon;

    // Status of its NodeConfig and its Node (status subresources).
    await eventually(
      'NodeConfig status from the agent',
      async () => {
        const nc = await get(objectPath(NODECONFIGS, NODE));
        return nc.status.conditions.some((c) => c.type === 'Ready');
      },
      { timeoutMs: 30_000 },
    );
    await eventually(
      'Node NetworkUnavailable=False',
      async () => {
        const n = await get(`/api/v1/nodes/${NODE}`);
        const c = n.status.conditions.find((x) => x.type === 'NetworkUnavailable');
        return c?.status === 'False' && c.reason === 'FlockReady';
      },
      { timeoutMs: 30_000 },
    );
    // The peer's password came from the Secret (bird.conf is written even without BIRD running).
    await eventually(
      'bird.conf with the Secret password',
      async () =>
        (await readFile(started.birdConfig, 'utf8').catch(() => '')).includes('flock-test-pw'),
      { timeoutMs: 30_000 },
    );

    // A pod wired through the real plugin, as a runtime would.
    podNs = await Netns.create('chartpod');
    const { result, del } = await wirePod({
      admin,
      nodeName: NODE,
      socket: started.socket,
      podNs,
      dir,
    });
    expect(result.ips.map((i) => i.address)).toEqual([
      expect.stringMatching(/^2001:db8:100:(0)?:[0-9a-f:]+\/128$/),
      expect.stringMatching(/^192\.0\.2\.\d+\/32$/),
    ]);
    await eventually(
      'allocation counted in status',
      async () => {
        const nc = await get(objectPath(NODECONFIGS, NODE));
        return nc.status.allocations?.pods === 1;
      },
      { timeoutMs: 30_000 },
    );
    await del();
    // The API server's refusals say "forbidden" (a bare 403 also matches timestamps' ms).
    expect(agent.logs.filter((l) => /forbidden/i.test(l))).toEqual([]);
  }, 120_000);

  it("an agent changes only its own node's status: another node's agent is refused (each one's token)", async () => {
    const own = await mintAgentToken(cp, admin, NODE);
    const other = await mintAgentToken(cp, admin, 'node-b');
    const unbound = await cp.mintServiceAccount(NAMESPACE, 'flock-agent');
    // The agent's own request, with each one's token: a merge patch of the status subresource.
    // Not `kubectl patch --subresource=status`: kubectl GETs the status first, which the agents
    // may not do (least privilege; tried, it is refused before the patch is sent).
    const patch = (
      as: { kubeConfig: ConstructorParameters<typeof HttpTransport>[0] },
      path: string,
    ) =>
      new HttpTransport(as.kubeConfig)
        .request({
          method: 'PATCH',
          path: `${path}/status`,
          contentType: 'application/merge-patch+json',
          body: { status: { conditions: [] } },
        })
        .then(
          () => 'allowed',
          (e: unknown) => String(e),
        );
    const nodeA = `/api/v1/nodes/${NODE}`;
    // node-b's agent: not node-a's NodeConfig, not node-a's Node; its own Node, yes.
    expect(await patch(other, objectPath(NODECONFIGS, NODE))).toMatch(
      /the flock agent of node "node-b" may change only its own node's status, not nodeconfigs "node-a"/,
    );
    expect(await patch(other, nodeA)).toMatch(
      /the flock agent of node "node-b" may change only its own node's status, not nodes "node-a"/,
    );
    expect(await patch(other, '/api/v1/nodes/node-b')).toBe('allowed');
    // A token bound to no pod names no node: refused too.
    expect(await patch(unbound, nodeA)).toMatch(/may change only its own node/);
    // node-a's own agent may (RBAC and the policy agree).
    expect(await patch(own, nodeA)).toBe('allowed');
    expect(await patch(own, objectPath(NODECONFIGS, NODE))).toBe('allowed');
  }, 60_000);

  it('the accounts can do no more than that (kubectl auth can-i with their own tokens)', async () => {
    const rows = [];
    for (const check of CHECKS) {
      const answers = {
        operator: await canI(tokens.operator, check),
        agent: await canI(tokens.agent, check),
      };
      rows.push({ check, answers });
    }
    const table = renderTable(rows);
    console.log(`can-i with the chart's ServiceAccounts:\n${table}`);
    for (const who of ['operator', 'agent'] as const) {
      const list = await kubectl(tokens[who], ['auth', 'can-i', '--list', '-n', NAMESPACE]);
      console.log(`kubectl auth can-i --list -n ${NAMESPACE} (${who}):\n${list.stdout}`);
      expect(list.stdout).not.toMatch(/^\*\.\*\s/m); // no wildcard grant
    }
    expect(
      rows
        .filter(
          (r) =>
            r.answers.operator !== r.check.expect.operator ||
            r.answers.agent !== r.check.expect.agent,
        )
        .map((r) => r.check),
    ).toEqual([]);
    if (UPDATE) await writeDocumentedTable(table);
    expect(
      tableCells(await documentedTable()),
      'docs/operations.md table: UPDATE_GOLDEN=1 rewrites it',
    ).toEqual(tableCells(table));
  }, 120_000);

  it('helm upgrade applies changed values', async () => {
    await stopDaemon(agent);
    await stopDaemon(operator);
    await helm(
      cp.kubeconfigPath,
      [
        'upgrade',
        RELEASE,
        CHART,
        '-n',
        NAMESPACE,
        '--reuse-values',
        '--set',
        'operator.replicas=3',
        '--set',
        'agent.logLevel=debug',
        '--set',
        'agent.bgpPasswordSecrets={bgp-tor}',
      ],
      { timeoutMs: 120_000 },
    );
    const deploy = await get(`/apis/apps/v1/namespaces/${NAMESPACE}/deployments/flock-operator`);
    expect(deploy.spec['replicas']).toBe(3);
    const ds = podSpec(await manifest(), 'DaemonSet', 'flock-agent');
    expect(container(ds.containers, 'agent').args).toContain('--log-level=debug');
    const live = await kubectl(cp.kubeconfigPath, [
      'get',
      'ds',
      'flock-agent',
      '-n',
      NAMESPACE,
      '-o',
      'jsonpath={.spec.template.spec.containers[0].args}',
    ]);
    expect(JSON.parse(live.stdout)).toContain('--log-level=debug');
    const role = await get(
      `/apis/rbac.authorization.k8s.io/v1/namespaces/${NAMESPACE}/roles/flock-agent-bgp-secrets`,
    );
    expect(role.rules[0]?.resourceNames).toEqual(['bgp-tor']);
    await get(objectPath(POOLS, 'sample')); // --reuse-values kept the sample Pool
    const yes = (resource: string) =>
      canI(tokens.agent, {
        verb: 'get',
        resource,
        namespace: NAMESPACE,
        expect: { operator: false, agent: true },
      });
    expect(await yes('secrets/bgp-tor')).toBe(true);
    expect(await yes('secrets/other')).toBe(false);
    const history = await helm(cp.kubeconfigPath, [
      'history',
      RELEASE,
      '-n',
      NAMESPACE,
      '-o',
      'json',
    ]);
    expect((JSON.parse(history.stdout) as { revision: number }[]).map((h) => h.revision)).toEqual([
      1, 2,
    ]);
  }, 120_000);

  it('helm uninstall removes the release and keeps the CRDs (and the objects in them)', async () => {
    const objects: K8sObject[] = await manifest();
    await helm(
      cp.kubeconfigPath,
      ['uninstall', RELEASE, '-n', NAMESPACE, '--wait', '--timeout', '60s'],
      { timeoutMs: 120_000 },
    );
    // Kept: the Pool (its CRD stays) and the ClusterNetworkPolicy CRD (helm.sh/resource-policy).
    for (const o of objects.filter((x) => !['Pool', 'CustomResourceDefinition'].includes(x.kind))) {
      const ns = o.metadata.namespace ? ['-n', o.metadata.namespace] : [];
      const r = await kubectl(cp.kubeconfigPath, [
        'get',
        o.kind,
        o.metadata.name,
        ...ns,
        '--ignore-not-found',
        '-o',
        'name',
      ]);
      expect(r.stdout.trim(), `${o.kind}/${o.metadata.name} left behind`).toBe('');
    }
    await kubectl(cp.kubeconfigPath, [
      'get',
      'crd',
      'pools.flock.fritzlab.net',
      'nodeconfigs.flock.fritzlab.net',
      'addressclaims.flock.fritzlab.net',
      'clusternetworkpolicies.policy.networking.k8s.io',
    ]);
    // NodeConfigs stay with the CRD (the operator's finalizer holds them until it runs again).
    await get(objectPath(NODECONFIGS, NODE));
  }, 120_000);
});
