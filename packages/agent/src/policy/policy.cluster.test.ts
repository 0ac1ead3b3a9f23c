// NetworkPolicy for real: the agent process against a real API server, pods wired by cnitool
// in real namespaces, nftables in the node namespace, probed with real TCP connections.
// Self-contained: its own control plane, node namespace and agent.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { connect } from 'node:net';
import { nodeConfig } from '@flock/api/testing';
import {
  CLUSTER_NETWORK_POLICIES,
  type HttpTransport,
  NETWORK_POLICIES,
  NODECONFIGS,
  objectPath,
} from '@flock/kube';
import {
  Netns,
  eventually,
  installCnpCrd,
  requireKernelTier,
  type ControlPlane,
} from '@flock/testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { hostVethName } from '../datapath/index.js';
import { TestNode } from '../../testing/node-harness.js';
import { createTestPod, startTestCluster, type TestCluster } from '../../testing/test-cluster.js';

const PORT = 8080;
/** A pod's TCP server on PORT, and a prober that connects on command (a unix socket, which is
 *  not namespaced, so the test reaches it) and answers connected / timeout / refused. */
const POD_PROCESS = `
const net = require('net');
// Probers hang up at once: a reset is normal here, not a crash.
net.createServer((s) => { s.on('error', () => {}); s.end('hi'); }).listen(${PORT}, '::', () => {
  net.createServer((c) => {
    let buf = '';
    c.on('data', (d) => {
      buf += d;
      if (!buf.includes('\\n')) return;
      const [host, ms] = buf.trim().split(' ');
      const s = net.connect({ host, port: ${PORT} });
      const t = setTimeout(() => { s.destroy(); c.end('timeout'); }, Number(ms));
      s.on('connect', () => { clearTimeout(t); s.destroy(); c.end('connected'); });
      s.on('error', (e) => { clearTimeout(t); c.end(e.code === 'ECONNREFUSED' ? 'refused' : e.code); });
    });
  }).listen(process.argv[1], () => console.log('ready'));
});`;

interface TestPod {
  name: string;
  ns: Netns;
  control: string;
  ip6?: string;
  veth?: string;
}

let cp: ControlPlane;
let api: HttpTransport;
let node: TestNode;
let nodeNs: Netns;
let dir: string;
const pods: TestPod[] = [];

let apply: TestCluster['apply'];
const policy = (name: string, spec: object) =>
  apply(NETWORK_POLICIES, {
    apiVersion: 'networking.k8s.io/v1',
    kind: 'NetworkPolicy',
    metadata: { name, namespace: 'default' },
    spec,
  });
const deletePolicy = (name: string) =>
  api.request({ method: 'DELETE', path: objectPath(NETWORK_POLICIES, name, 'default') });

/** The Pod object, its namespace and its processes (server + prober), not wired yet. */
async function createPod(name: string, labels: Record<string, string>): Promise<TestPod> {
  await createTestPod(api, { name, nodeName: 'node-a', labels });
  const ns = await Netns.create('pod');
  const control = join(dir, `${name}.sock`);
  const child = ns.spawn(process.execPath, ['-e', POD_PROCESS, control]);
  await new Promise<void>((resolve, reject) => {
    child.stdout!.on('data', (d: Buffer) => d.toString().includes('ready') && resolve());
    child.once('exit', (code) => reject(new Error(`pod process ${name} exited ${code}`)));
  });
  const pod: TestPod = { name, ns, control };
  pods.push(pod);
  return pod;
}

async function wire(pod: TestPod): Promise<TestPod> {
  const out = await node.cnitool('add', pod.ns.path, { namespace: 'default', name: pod.name });
  pod.ip6 = (JSON.parse(out.stdout) as { ips: { address: string }[] }).ips[0]!.address.replace(
    '/128',
    '',
  );
  pod.veth = hostVethName(await TestNode.cnitoolContainerId(pod.ns.path), 'eth0');
  return pod;
}

/** Connect from `from` to `to` on PORT; what happened. */
function probe(from: TestPod, to: TestPod, timeoutMs = 1500): Promise<string> {
  return new Promise((resolve, reject) => {
    let answer = '';
    const c = connect(from.control, () => c.write(`${to.ip6} ${timeoutMs}\n`));
    c.on('data', (d) => (answer += d.toString()));
    c.on('end', () => resolve(answer));
    c.on('error', reject);
  });
}

/** Is the pod's veth in the map of ingress-isolated pods (the table in the node namespace)? */
async function ingressIsolated(pod: TestPod): Promise<boolean> {
  const r = await nodeNs.exec('nft', ['list', 'map', 'inet', 'flock', 'ingress_pods'], {
    okCodes: [0, 1],
  });
  return r.stdout.includes(`"${pod.veth}"`);
}

interface EventItem {
  type: string;
  reason: string;
  regarding: { kind: string; name: string };
  note: string;
}

/** The Event (events.k8s.io, any namespace) about this object, if one was written. */
async function eventAbout(kind: string, name: string): Promise<EventItem | undefined> {
  const list = (await api.request({ method: 'GET', path: '/apis/events.k8s.io/v1/events' })) as {
    items: EventItem[];
  };
  return list.items.find((e) => e.regarding.kind === kind && e.regarding.name === name);
}

/** The PolicyApplied condition of this node's NodeConfig status. */
async function policyApplied() {
  const nc = (await api.request({ method: 'GET', path: objectPath(NODECONFIGS, 'node-a') })) as {
    status?: { conditions?: { type: string; status: string; reason: string; message: string }[] };
  };
  return nc.status?.conditions?.find((c) => c.type === 'PolicyApplied');
}

beforeAll(async () => {
  requireKernelTier('cnitool', 'nsenter', 'nft', 'kubectl');
  ({ cp, api, apply } = await startTestCluster('node-a'));
  // Installed before the agent starts: its first pass waits for the cluster policy caches.
  await installCnpCrd(cp); // as the chart ships it (v0.3.0, experimental channel)
  await apply(NODECONFIGS, nodeConfig({ ipAlgo: 'sequential' }));
  nodeNs = await Netns.create('node');
  dir = await mkdtemp(join(tmpdir(), 'flock-policy-it-'));
  node = new TestNode({ cp, nodeName: 'node-a', netns: nodeNs, dir });
  await node.installPlugin();
  await node.startAgent();
}, 300_000);

afterAll(async () => {
  await node?.agent?.stop();
  for (const p of pods) await p.ns.destroy();
  await nodeNs?.destroy();
  await cp?.stop();
  if (dir) await rm(dir, { recursive: true, force: true });
});

describe('NetworkPolicy enforced by the agent', () => {
  let client: TestPod;
  let other: TestPod;

  it("a new pod's policy is in force when its ADD returns: the first connection is filtered", async () => {
    client = await wire(await createPod('client', { app: 'client' }));
    other = await wire(await createPod('other', { app: 'other' }));
    const canary = await wire(await createPod('canary', { role: 'guarded' }));
    await policy('guarded', {
      podSelector: { matchLabels: { role: 'guarded' } },
      ingress: [{ from: [{ podSelector: { matchLabels: { app: 'client' } } }] }],
    });
    // The agent has seen the policy once it isolates the pod that was already there.
    await eventually('the policy known to the agent', () => ingressIsolated(canary));

    const web = await createPod('web', { role: 'guarded' }); // listening before it is wired
    await wire(web);
    // Right after ADD returns — before any debounced pass could run — both probes go out.
    const [denied, allowed] = await Promise.all([probe(other, web), probe(client, web)]);
    expect(denied).toBe('timeout');
    expect(allowed).toBe('connected');
  });

  it('default deny plus an allow from a labelled pod, across two local pods; removal reopens', async () => {
    const a = await wire(await createPod('a', { app: 'a' }));
    const b = await wire(await createPod('b', { app: 'b' }));
    expect(await probe(a, b)).toBe('connected');
    await policy('default-deny', { podSelector: {}, policyTypes: ['Ingress'] });
    await policy('b-from-a', {
      podSelector: { matchLabels: { app: 'b' } },
      ingress: [
        { from: [{ podSelector: { matchLabels: { app: 'a' } } }], ports: [{ port: PORT }] },
      ],
    });
    await eventually('b reachable from a only', async () => (await probe(b, a)) === 'timeout');
    expect(await probe(a, b)).toBe('connected');
    expect(await probe(other, b)).toBe('timeout');
    expect(await probe(client, a)).toBe('timeout');

    await deletePolicy('default-deny');
    await eventually('a open again', async () => (await probe(b, a)) === 'connected');
    expect(await probe(other, b)).toBe('timeout'); // b-from-a still isolates b
    await deletePolicy('b-from-a');
    await eventually('b open again', async () => (await probe(other, b)) === 'connected');
  });

  it('a policy the API server accepts but flock cannot enforce: isolated, reported, Warning Event', async () => {
    const d = await wire(await createPod('d', { app: 'd' }));
    expect(await probe(client, d)).toBe('connected');
    // 65 values in one expression: valid for Kubernetes, above flock's selector limits.
    const values = Array.from({ length: 65 }, (_, i) => `v${i}`);
    await policy('too-big', {
      podSelector: { matchLabels: { app: 'd' } },
      ingress: [
        { from: [{ podSelector: { matchExpressions: [{ key: 'app', operator: 'In', values }] } }] },
      ],
    });
    await eventually(
      'd isolated (fail closed)',
      async () => (await probe(client, d)) === 'timeout',
    );
    const logged = await eventually('PolicyNotEnforceable logged', () =>
      node.agent!.logs.find(
        (l) => l.includes('NetworkPolicy pass') && l.includes('PolicyNotEnforceable'),
      ),
    );
    expect(logged).toMatch(
      /networkpolicy default\/too-big: spec\.ingress\[0\]\.from\[0\]\.podSelector/,
    );
    const event = await eventually('a Warning Event on the NetworkPolicy', () =>
      eventAbout('NetworkPolicy', 'too-big'),
    );
    expect(event).toMatchObject({ type: 'Warning', reason: 'PolicyNotEnforceable' });
    expect(event.note).toMatch(/isolated \(Ingress\) and it allows nothing/);
    const failed = await eventually('PolicyApplied=False on the NodeConfig', async () => {
      const c = await policyApplied();
      return c?.status === 'False' && c;
    });
    expect(failed).toMatchObject({ reason: 'PolicyNotEnforceable' });
    expect(failed.message).toMatch(/networkpolicy default\/too-big/);

    await deletePolicy('too-big');
    await eventually('d open again', async () => (await probe(client, d)) === 'connected');
    const applied = await eventually('PolicyApplied=True again', async () => {
      const c = await policyApplied();
      return c?.status === 'True' && c;
    });
    expect(applied).toMatchObject({
      reason: 'Applied',
      message: expect.stringMatching(/local pod/),
    });
  });
});

describe('ClusterNetworkPolicy enforced by the agent (the upstream CRD)', () => {
  const cnp = (name: string, spec: object) =>
    apply(CLUSTER_NETWORK_POLICIES, {
      apiVersion: 'policy.networking.k8s.io/v1alpha2',
      kind: 'ClusterNetworkPolicy',
      metadata: { name },
      spec,
    });
  const deleteCnp = (name: string) =>
    api.request({ method: 'DELETE', path: objectPath(CLUSTER_NETWORK_POLICIES, name) });

  it('an Admin Deny overrides a NetworkPolicy allow; Pass defers to it; a Warning for domainNames', async () => {
    const x = await wire(await createPod('cx', { app: 'cx' }));
    const y = await wire(await createPod('cy', { app: 'cy' }));
    const z = await wire(await createPod('cz', { app: 'cz' }));
    await policy('cx-from-all', { podSelector: { matchLabels: { app: 'cx' } }, ingress: [{}] });
    await eventually('cx isolated by its NetworkPolicy', () => ingressIsolated(x));
    expect(await probe(y, x)).toBe('connected');
    const pods = (app: string) => ({
      pods: { namespaceSelector: {}, podSelector: { matchLabels: { app } } },
    });
    await cnp('guard-cx', {
      tier: 'Admin',
      priority: 10,
      subject: pods('cx'),
      ingress: [
        { name: 'z-to-np', action: 'Pass', from: [pods('cz')] },
        { name: 'no-one-else', action: 'Deny', from: [{ namespaces: {} }] },
      ],
    });
    await eventually('Admin Deny in force', async () => (await probe(y, x)) === 'timeout');
    expect(await probe(z, x)).toBe('connected'); // passed to the NetworkPolicy, which allows

    await cnp('dns-only', {
      tier: 'Baseline',
      priority: 1,
      subject: { namespaces: {} },
      egress: [{ action: 'Accept', to: [{ domainNames: ['example.com'] }] }],
    });
    const event = await eventually('a Warning Event on the ClusterNetworkPolicy', () =>
      eventAbout('ClusterNetworkPolicy', 'dns-only'),
    );
    expect(event).toMatchObject({ type: 'Warning', reason: 'PolicyNotEnforceable' });
    expect(event.note).toMatch(/domainNames peers cannot be enforced/);

    await deleteCnp('guard-cx');
    await deleteCnp('dns-only');
    await eventually('open again', async () => (await probe(y, x)) === 'connected');
    await deletePolicy('cx-from-all');
  });
});
