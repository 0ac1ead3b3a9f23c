// Shared by the CNI handler tests (handlers-*.test.ts): a node with a NodeConfig and an
// allocator, an allocation store in a temp dir, the fake datapath, the pods the API knows, and
// the handlers over them. Each test file runs setUp before and tearDown after every test; the
// bindings below are the current test's.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { silentLogger, type AgentRequest, type Pod } from '@flock/api';
import { nodeConfig as buildNodeConfig, pod as buildPod } from '@flock/api/testing';
import { AddressAllocator } from '@flock/ipam';
import { AllocationStore } from '../src/store/index.js';
import { FakeDatapath } from './datapath/fake.js';
import type { NodeState } from '../src/node/node-config.js';
import { CniHandlers, type CniHandlerDeps } from '../src/cni/handlers.js';
import { testClaims, type TestClaims } from './claims.js';

export const nodeConfig = buildNodeConfig({
  ipAlgo: 'sequential',
  spec: {
    cidr4: '192.0.2.16/28',
    pinnedCIDRs: ['2001:db8:200::/64', '198.51.100.0/24'],
    anycastCIDRs: ['2001:db8:300::/120'],
    // Every namespace may claim (the legacy, insecure grant): these tests are about ADD itself.
    pinnedGrants: [{ anyNamespace: true }],
    anycastGrants: [{ anyNamespace: true }],
    bgp: { asn: 64512, peers: [], allowedPodCommunities: { standard: ['65000:666'] } },
  },
});

export const pod = (name: string, annotations: Record<string, string> = {}, uid?: string): Pod =>
  buildPod({ name, annotations, uid });

let dir: string;
export let store: AllocationStore;
export let datapath: FakeDatapath;
export let node: NodeState | undefined;
export let pods: Map<string, Pod>;
export let warnings: string[];
export let committedHook: string[];
export let handlers: CniHandlers;
export let claims: TestClaims;

/** The node's state the handlers see from now on (undefined: no NodeConfig yet). */
export function setNode(n: NodeState | undefined): void {
  node = n;
}

export const hostLinks = () =>
  datapath
    .hostState()
    .links.filter((l) => l.kind === 'veth')
    .map((l) => l.name);

/** New handlers over the current state, with `extra` in place of the defaults. */
export function make(extra: Partial<CniHandlerDeps> = {}): void {
  handlers = new CniHandlers({
    store,
    datapath,
    node: () => node,
    pods: { get: async (ns, name) => pods.get(`${ns}/${name}`) },
    claims,
    logger: silentLogger,
    warn: (_pod, reason, message) => warnings.push(`${reason}: ${message}`),
    hooks: { beforeCommit: async (e) => void committedHook.push(e.containerID) },
    ...extra,
  });
}

export async function setUp(): Promise<void> {
  dir = await mkdtemp(join(tmpdir(), 'flock-cni-'));
  store = new AllocationStore(join(dir, 'store.json'));
  await store.load();
  datapath = new FakeDatapath();
  const alloc = AddressAllocator.create({
    cidr6: nodeConfig.spec.cidr6,
    cidr4: nodeConfig.spec.cidr4!,
    pinnedCIDRs: nodeConfig.spec.pinnedCIDRs!,
  });
  if (!alloc.ok) throw new Error(alloc.error);
  node = { nodeConfig, allocator: alloc.value };
  pods = new Map([['default/web', pod('web')]]);
  warnings = [];
  committedHook = [];
  claims = testClaims();
  make();
}

export const tearDown = () => rm(dir, { recursive: true, force: true });

export const request = (
  command: AgentRequest['command'],
  over: Partial<AgentRequest> = {},
): AgentRequest => ({
  command,
  containerID: 'c1',
  ifName: 'eth0',
  netns: datapath.createNetns('/var/run/netns/p1'),
  args: { K8S_POD_NAMESPACE: 'default', K8S_POD_NAME: 'web' },
  config: { cniVersion: '1.1.0', name: 'flock', type: 'flock' },
  ...over,
});
