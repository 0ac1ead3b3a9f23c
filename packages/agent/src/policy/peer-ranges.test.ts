// The reconciler with the NodeConfigs' ranges on FakeApiServer: a peer counts by the addresses
// inside its node's prefixes, a new NodeConfig brings its node's pods in, an address outside is
// reported once (a warning and the counter); a Deny drops what no known pod has in the ranges.
import { silentLogger, type Pod } from '@flock/api';
import { nodeConfig } from '@flock/api/testing';
import {
  CLUSTER_NETWORK_POLICIES,
  NAMESPACES,
  NETWORK_POLICIES,
  NODECONFIGS,
  PODS,
  type KubeObject,
} from '@flock/kube';
import { FakeApiServer, createMemoryLogger, type MemoryLogger } from '@flock/kube/testing';
import { NftApplier } from '@flock/netpol';
import { eventually } from '@flock/testkit';
import { Registry } from 'prom-client';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { AgentMetrics } from '../core/metrics.js';
import { policyCaches } from './caches.js';
import { PeerRanges } from './peer-ranges.js';
import { PolicyReconciler } from './reconciler.js';
import {
  RecordingNft,
  allowFrom,
  entry,
  namespace,
  pod,
  startedPods,
  stopPods,
} from '../../testing/policy.js';

let api: FakeApiServer;
let nft: RecordingNft;
let logger: MemoryLogger;
let metrics: AgentMetrics;
let reconciler: PolicyReconciler;
const put = (ref: Parameters<FakeApiServer['putObject']>[0], obj: object) =>
  api.putObject(ref, obj as KubeObject);
const settle = (ms = 150) => new Promise((r) => setTimeout(r, ms));

/** A pod of namespace shop on `node`. */
function peer(name: string, labels: Record<string, string>, ips: string[], node: string): Pod {
  const p = pod(name, labels, ips);
  return { ...p, spec: { ...p.spec, nodeName: node } };
}

async function start(otherRanges: string[] = []) {
  const uid = put(PODS, peer('web', { app: 'web' }, [], 'node-a')).metadata.uid;
  const web = entry('web', '2001:db8:a::5', { podUID: uid });
  reconciler = new PolicyReconciler({
    caches: policyCaches(api, startedPods(api), silentLogger),
    store: { entries: () => [web] },
    pods: { get: () => Promise.resolve(undefined) },
    applier: new NftApplier(nft.run),
    logger,
    metrics,
    peerRanges: new PeerRanges({ transport: api, logger, otherRanges }),
    debounceMs: 30,
    resyncMs: 60_000,
  });
  reconciler.start();
  await reconciler.waitForSync(5_000);
  await eventually('the first pass', () => reconciler.lastResult !== undefined);
}

const ignoredCount = async () =>
  (await metrics.peerAddressesIgnored.get()).values.reduce((n, v) => n + v.value, 0);

beforeEach(() => {
  api = new FakeApiServer();
  put(NAMESPACES, namespace('shop'));
  put(NETWORK_POLICIES, allowFrom('shop/web', 'web', 'client'));
  const node = (name: string, cidr6: string, cidr4: string) =>
    put(NODECONFIGS, nodeConfig({ name, spec: { cidr6, cidr4 } }));
  node('node-a', '2001:db8:a::/64', '198.51.100.0/28');
  node('node-b', '2001:db8:b::/64', '198.51.100.16/28');
  nft = new RecordingNft();
  logger = createMemoryLogger();
  metrics = new AgentMetrics(new Registry(), { processMetrics: false });
});
afterEach(async () => {
  await reconciler?.stop();
  await stopPods();
});

describe('PolicyReconciler with peer ranges', () => {
  it("allows a peer only by addresses in its node's prefixes, and reports the others once", async () => {
    put(PODS, peer('good', { app: 'client' }, ['2001:db8:b::7', '198.51.100.20'], 'node-b'));
    put(PODS, peer('bad', { app: 'client' }, ['2001:db8:a::9', '192.0.2.9'], 'node-b'));
    await start();
    await eventually('the good peer', () => nft.last.includes('2001:db8:b::7'));
    expect(nft.last).toContain('198.51.100.20');
    expect(nft.last).not.toContain('2001:db8:a::9'); // node a's range, claimed on node b
    expect(nft.last).not.toContain('192.0.2.9');
    expect(logger.find('warn', 'outside its node')).toEqual([
      expect.objectContaining({
        meta: { pod: 'shop/bad', node: 'node-b', addresses: '2001:db8:a::9,192.0.2.9' },
      }),
    ]);
    expect(await ignoredCount()).toBe(2);
    // Later passes report nothing new.
    await reconciler.resync();
    expect(logger.find('warn', 'outside its node')).toHaveLength(1);
    expect(await ignoredCount()).toBe(2);
  });

  it("a node's NodeConfig coming brings its pods' addresses in; one going takes them out", async () => {
    put(PODS, peer('far', { app: 'client' }, ['2001:db8:c::7'], 'node-c'));
    await start();
    await settle();
    expect(nft.last).not.toContain('2001:db8:c::7');
    put(NODECONFIGS, nodeConfig({ name: 'node-c', spec: { cidr6: '2001:db8:c::/64' } }));
    await eventually('the peer of node c', () => nft.last.includes('2001:db8:c::7'));
    api.deleteObject(NODECONFIGS, 'node-c');
    await eventually('gone with its NodeConfig', () => !nft.last.includes('2001:db8:c::7'));
  });

  it("a Deny by namespace drops what no known pod has in every node's ranges, as they change", async () => {
    api.register(CLUSTER_NETWORK_POLICIES, { statusSubresource: true });
    put(CLUSTER_NETWORK_POLICIES, {
      apiVersion: 'policy.networking.k8s.io/v1alpha2',
      kind: 'ClusterNetworkPolicy',
      metadata: { name: 'deny-red' },
      spec: {
        tier: 'Admin',
        priority: 1,
        subject: { namespaces: {} },
        ingress: [{ action: 'Deny', from: [{ namespaces: { matchLabels: { team: 'red' } } }] }],
      },
    });
    put(PODS, peer('known', { app: 'client' }, ['2001:db8:b::7'], 'node-b'));
    await start(['2001:db8:f0::/48']);
    /** The unknown-peers rule's two sets (ranges, known pods) in the last script, IPv6. */
    const unknown = () => {
      const rule =
        /ip6 saddr @(\S+)_v6 ip6 saddr != @(\S+)_v6 drop comment "[^"]*unknown peers"/.exec(
          nft.last,
        );
      const elements = (set: string | undefined) =>
        new RegExp(`set ${set}_v6 \\{[^}]*?elements = \\{ ([^}]*) \\}`).exec(nft.last)?.[1];
      return { ranges: elements(rule?.[1]), known: elements(rule?.[2]) };
    };
    await eventually('the unknown peers dropped', () => unknown().ranges !== undefined);
    expect(unknown()).toEqual({
      ranges: '2001:db8:a::/64, 2001:db8:b::/64, 2001:db8:f0::/48',
      known: '2001:db8:a::5, 2001:db8:b::7',
    });
    put(NODECONFIGS, nodeConfig({ name: 'node-c', spec: { cidr6: '2001:db8:c::/64' } }));
    await eventually('node c in the ranges', () =>
      unknown().ranges?.split(', ').includes('2001:db8:c::/64'),
    );
  });

  it('pods of a node without a NodeConfig count inside --peer-pod-ranges', async () => {
    put(PODS, peer('other-cni', { app: 'client' }, ['2001:db8:f0::7', '10.0.0.7'], 'node-x'));
    await start(['2001:db8:f0::/48']);
    await eventually('the peer', () => nft.last.includes('2001:db8:f0::7'));
    expect(nft.last).not.toContain('10.0.0.7');
  });
});
