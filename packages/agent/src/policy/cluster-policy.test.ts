import { silentLogger, type Pod } from '@flock/api';
import type { AllocationEntry } from '../store/index.js';
import {
  CLUSTER_NETWORK_POLICIES,
  NAMESPACES,
  NODEPEERS,
  NODES,
  PODS,
  groupVersionPath,
  type KubeObject,
} from '@flock/kube';
import { FakeApiServer, createMemoryLogger, type MemoryLogger } from '@flock/kube/testing';
import { NftApplier } from '@flock/netpol';
import { eventually } from '@flock/testkit';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { hostVethName } from '../datapath/index.js';
import { policyCaches } from './caches.js';
import { checkClusterPolicy } from './cluster-validate.js';
import { PolicyReconciler } from './reconciler.js';
import type { PolicyProblem } from './state.js';
import {
  RecordingNft,
  entry,
  namespace,
  pod,
  startedPods,
  stopPods,
} from '../../testing/policy.js';

let api: FakeApiServer;
let nft: RecordingNft;
let entries: AllocationEntry[];
let warnings: PolicyProblem[];
let logger: MemoryLogger;
let reconciler: PolicyReconciler;
const veth = (name: string) => hostVethName(`ctr-${name}`, 'eth0');
const put = (ref: Parameters<FakeApiServer['putObject']>[0], obj: object) =>
  api.putObject(ref, obj as KubeObject);
const cnp = (name: string, spec: Record<string, unknown>) => ({
  apiVersion: 'policy.networking.k8s.io/v1alpha2',
  kind: 'ClusterNetworkPolicy',
  metadata: { name },
  spec,
});
const denyFromAll = cnp('deny', {
  tier: 'Admin',
  priority: 10,
  subject: { namespaces: {} },
  ingress: [{ action: 'Deny', from: [{ namespaces: {} }] }],
});
const noNodes = cnp('no-nodes', {
  tier: 'Admin',
  priority: 1,
  subject: { namespaces: {} },
  egress: [{ action: 'Deny', to: [{ nodes: { matchLabels: { infra: 'yes' } } }] }],
});
const nodeAt = (ip: string) => ({
  metadata: { name: 'n1', labels: { infra: 'yes' } },
  status: {
    addresses: [
      { type: 'InternalIP', address: ip },
      { type: 'Hostname', address: 'n1' },
    ],
  },
});
const nodePeer = (name: string, labels: Record<string, string>, addresses: string[]) => ({
  apiVersion: 'flock.fritzlab.net/v1alpha1',
  kind: 'NodePeer',
  metadata: { name },
  spec: { labels, addresses },
});
const adminChain = (script: string) =>
  script.includes(`chain ingress_${veth('web')} {`) && script.includes('Admin deny ingress[0]');

async function start(recheckMs = 50, nodePeers = false) {
  reconciler = new PolicyReconciler({
    caches: policyCaches(api, startedPods(api), logger, {
      recheckMs,
      ...(nodePeers ? { nodePeers: { nodeName: 'self' } } : {}),
    }),
    store: { entries: () => entries },
    pods: { get: async () => undefined as Pod | undefined },
    applier: new NftApplier(nft.run),
    logger: silentLogger,
    warn: (p) => warnings.push(p),
    debounceMs: 20,
    resyncMs: 60_000,
  });
  reconciler.start();
  expect(await reconciler.waitForSync(5_000)).toBe(true);
  await eventually('the first pass', () => reconciler.lastResult !== undefined);
}

/** How often discovery was asked whether the ClusterNetworkPolicy CRD is served. */
const discoveries = (server: FakeApiServer) =>
  server.requests.filter((r) => r.path === groupVersionPath(CLUSTER_NETWORK_POLICIES)).length;

beforeEach(() => {
  api = new FakeApiServer();
  put(NAMESPACES, namespace('shop'));
  const uid = put(PODS, pod('web', { app: 'web' }, ['2001:db8:1::5'])).metadata.uid;
  entries = [entry('web', '2001:db8:1::5', { podUID: uid })];
  nft = new RecordingNft();
  warnings = [];
  logger = createMemoryLogger();
});
afterEach(async () => {
  await reconciler?.stop();
  await stopPods();
});

describe('ClusterNetworkPolicy in the agent', () => {
  it('runs without the CRD, says so once, and starts enforcing when it is installed', async () => {
    await start();
    expect(reconciler.lastResult).toMatchObject({ ok: true, reason: 'Applied' });
    await eventually('several re-checks', () => discoveries(api) >= 3);
    expect(
      logger.find('info', 'CRD (policy.networking.k8s.io/v1alpha2) is not installed'),
    ).toHaveLength(1);
    api.register(CLUSTER_NETWORK_POLICIES, { statusSubresource: true });
    put(CLUSTER_NETWORK_POLICIES, denyFromAll);
    await eventually('the Admin rule in force', () => adminChain(nft.last));
    expect(reconciler.lastResult?.message).toMatch(/1 under ClusterNetworkPolicy/);
    api.deleteObject(CLUSTER_NETWORK_POLICIES, 'deny');
    await eventually('gone again', () => !adminChain(nft.last));
  });

  it('with the CRD installed, the first pass already has the policies', async () => {
    api.register(CLUSTER_NETWORK_POLICIES, { statusSubresource: true });
    put(CLUSTER_NETWORK_POLICIES, denyFromAll);
    await start();
    expect(adminChain(nft.kernel.listing())).toBe(true);
    expect(nft.scripts).toHaveLength(1);
  });

  it('nodes peers follow the Node objects’ addresses', async () => {
    api.register(CLUSTER_NETWORK_POLICIES, { statusSubresource: true });
    put(CLUSTER_NETWORK_POLICIES, noNodes);
    await start();
    put(NODES, nodeAt('2001:db8:ff::1'));
    await eventually('the node address', () => nft.last.includes('2001:db8:ff::1'));
    put(NODES, nodeAt('2001:db8:ff::2'));
    await eventually('the new address', () => nft.last.includes('2001:db8:ff::2'));
    expect(nft.last).not.toContain('2001:db8:ff::1');
  });

  it('with node peers: they follow the operator’s NodePeers, and no Node is watched', async () => {
    api.register(CLUSTER_NETWORK_POLICIES, { statusSubresource: true });
    api.register(NODEPEERS);
    put(CLUSTER_NETWORK_POLICIES, noNodes);
    put(NODEPEERS, nodePeer('self', { infra: 'no' }, ['2001:db8:ff::5']));
    put(NODEPEERS, nodePeer('n1', { infra: 'yes' }, ['2001:db8:ff::1', '192.0.2.7']));
    // A Node object is no peer here: only what the operator published counts.
    put(NODES, nodeAt('2001:db8:ff::9'));
    await start(50, true);
    await eventually('the node peer’s addresses', () => nft.last.includes('2001:db8:ff::1'));
    expect(nft.last).toContain('192.0.2.7');
    put(NODEPEERS, nodePeer('n1', { infra: 'yes' }, ['2001:db8:ff::2']));
    await eventually('the new address', () => nft.last.includes('2001:db8:ff::2'));
    expect(nft.last).not.toContain('2001:db8:ff::1');
    expect(nft.last).not.toContain('2001:db8:ff::9');
    expect(api.requests.some((r) => r.path.startsWith('/api/v1/nodes'))).toBe(false);
    api.deleteObject(NODEPEERS, 'n1');
    await eventually('no node peer left', () => !nft.last.includes('2001:db8:ff::2'));
  });

  it('with node peers: every Node until this node’s NodePeer is published, then NodePeers alone', async () => {
    api.register(CLUSTER_NETWORK_POLICIES, { statusSubresource: true });
    api.register(NODEPEERS);
    put(CLUSTER_NETWORK_POLICIES, noNodes);
    // The operator has published another node, not this one: not caught up (or an old one).
    put(NODEPEERS, nodePeer('n1', { infra: 'yes' }, ['2001:db8:ff::1']));
    put(NODES, nodeAt('2001:db8:ff::9'));
    await start(50, true);
    await eventually('the Node’s address', () => nft.last.includes('2001:db8:ff::9'));
    expect(nft.last).not.toContain('2001:db8:ff::1');
    put(NODEPEERS, nodePeer('self', {}, ['2001:db8:ff::5']));
    await eventually('NodePeers in use', () => nft.last.includes('2001:db8:ff::1'));
    expect(nft.last).not.toContain('2001:db8:ff::9');
    // The Node watch is gone: a Node's change is no longer read.
    put(NODES, nodeAt('2001:db8:ff::8'));
    put(NODEPEERS, nodePeer('n1', { infra: 'yes' }, ['2001:db8:ff::3']));
    await eventually('the NodePeer’s change', () => nft.last.includes('2001:db8:ff::3'));
    expect(nft.last).not.toContain('2001:db8:ff::8');
    expect(logger.find('info', 'node peers now come from NodePeers')).toHaveLength(1);
  });

  it('with node peers but no NodePeer CRD: a watch of every Node, said once', async () => {
    api.register(CLUSTER_NETWORK_POLICIES, { statusSubresource: true });
    put(CLUSTER_NETWORK_POLICIES, noNodes);
    put(NODES, nodeAt('2001:db8:ff::1'));
    await start(50, true);
    await eventually('the Node’s address', () => nft.last.includes('2001:db8:ff::1'));
    expect(logger.find('info', 'the NodePeer CRD is not installed')).toHaveLength(1);
  });

  it('a policy it cannot read fails closed and is reported once, as the API defines', async () => {
    api.register(CLUSTER_NETWORK_POLICIES, { statusSubresource: true });
    put(
      CLUSTER_NETWORK_POLICIES,
      cnp('future', {
        tier: 'Admin',
        priority: 5,
        subject: { namespaces: {} },
        ingress: [
          { action: 'Accept', from: [{ namespaces: {} }], fromTheFuture: true },
          { action: 'Pass', from: [{ namespaces: {} }] },
        ],
      }),
    );
    await start();
    await eventually('a warning', () => warnings.length > 0);
    expect(warnings).toEqual([
      expect.objectContaining({
        kind: 'ClusterNetworkPolicy',
        name: 'future',
        message: expect.stringMatching(/spec\.ingress\[0\].*fail-closed/),
      }),
    ]);
    expect(reconciler.lastResult).toMatchObject({ ok: false, reason: 'PolicyNotEnforceable' });
    // The Accept rule is gone; the Pass rule denies.
    expect(nft.last).toContain('drop comment "Admin future ingress[0] flock-fail-closed"');
    expect(nft.last).not.toMatch(/accept comment "Admin future/);
  });
});

describe('checkClusterPolicy', () => {
  it('keeps a readable policy as it is; reports domainNames (they match nothing)', () => {
    const ok = checkClusterPolicy(denyFromAll);
    expect(ok?.problem).toBeUndefined();
    const dns = checkClusterPolicy(
      cnp('dns', {
        tier: 'Baseline',
        priority: 1,
        subject: { namespaces: {} },
        egress: [{ action: 'Accept', to: [{ domainNames: ['*.example.com'] }] }],
      }),
    );
    expect(dns?.problem).toMatch(/spec\.egress\[0\]: domainNames peers cannot be enforced/);
    expect(dns?.policy.spec.tier).toBe('Baseline');
  });

  it('an unreadable subject and tier: every pod, Admin; egress Deny is every address', () => {
    const c = checkClusterPolicy(
      cnp('odd', {
        tier: 'Developer',
        priority: 3,
        subject: { everything: true },
        egress: [{ action: 'Deny', to: [{ namespaces: {} }] }],
      }),
    );
    expect(c?.policy.spec).toEqual({
      tier: 'Admin',
      priority: 3,
      subject: { namespaces: {} },
      ingress: [],
      egress: [
        { name: 'flock-fail-closed', action: 'Deny', to: [{ networks: ['0.0.0.0/0', '::/0'] }] },
      ],
    });
  });
});
