// The policy reconciler as startAgent wires it: CNI ADD through the real handlers, on
// FakeDatapath and FakeApiServer, with a recording nft underneath NftApplier.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CniErrorCode, silentLogger, type AgentRequest } from '@flock/api';
import { nodeConfig } from '@flock/api/testing';
import {
  NAMESPACES,
  NETWORK_POLICIES,
  NODECONFIGS,
  NODES,
  PODS,
  type KubeObject,
} from '@flock/kube';
import { FakeApiServer } from '@flock/kube/testing';
import { NftApplier } from '@flock/netpol';
import { eventually } from '@flock/testkit';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { startAgent, type RunningAgent } from '../agent.js';
import { AgentConfig } from '../core/config.js';
import { hostVethName } from '../datapath/index.js';
import { FakeDatapath } from '../../testing/datapath/fake.js';
import {
  RecordingNft,
  allowFrom,
  hasPod,
  isolatedForIngress,
  namespace,
  pod,
} from '../../testing/policy.js';

let dir: string;
let api: FakeApiServer;
let datapath: FakeDatapath;
let nft: RecordingNft;
let agent: RunningAgent | undefined;

const put = (ref: Parameters<FakeApiServer['putObject']>[0], obj: object) =>
  api.putObject(ref, obj as KubeObject);

function add(name: string): AgentRequest {
  const uid = api.getObject<KubeObject>(PODS, name, 'shop')?.metadata.uid;
  return {
    command: 'ADD',
    containerID: `ctr-${name}`,
    ifName: 'eth0',
    netns: datapath.createNetns(`/var/run/netns/${name}`),
    args: { K8S_POD_NAMESPACE: 'shop', K8S_POD_NAME: name, ...(uid ? { K8S_POD_UID: uid } : {}) },
    config: { cniVersion: '1.1.0', name: 'flock', type: 'flock' },
  };
}
const veth = (name: string) => hostVethName(`ctr-${name}`, 'eth0');

beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'flock-policy-'));
  api = new FakeApiServer();
  put(NODES, { apiVersion: 'v1', kind: 'Node', metadata: { name: 'node-a' } });
  put(NODECONFIGS, nodeConfig({ ipAlgo: 'sequential' }));
  put(NAMESPACES, namespace('shop'));
  datapath = new FakeDatapath();
  nft = new RecordingNft();
  agent = await startAgent({
    config: AgentConfig.parse({
      nodeName: 'node-a',
      socketPath: join(dir, 'run', 'cni.sock'),
      storePath: join(dir, 'lib', 'allocations.json'),
      healthPort: 0,
    }),
    transport: api,
    datapath,
    logger: silentLogger,
    policyApplier: new NftApplier(nft.run),
  });
});
afterEach(async () => {
  await agent?.stop();
  agent = undefined;
  await rm(dir, { recursive: true, force: true });
});

describe('NetworkPolicy in the agent', () => {
  it("a new pod's rules are applied before its ADD returns; DEL takes them out", async () => {
    put(NETWORK_POLICIES, allowFrom('shop/web', 'web', 'client'));
    put(PODS, { ...pod('web', { app: 'web' }, []), spec: { nodeName: 'node-a', containers: [] } });
    const count = nft.scripts.length;
    const r = await agent!.handlers.handle(add('web'));
    expect(r.ok).toBe(true);
    // Synchronously, not by a debounced pass: the last apply happened inside the ADD.
    expect(nft.scripts.length).toBeGreaterThan(count);
    expect(isolatedForIngress(nft.last, veth('web'))).toBe(true);
    expect(nft.last).toContain(`"${veth('web')}" . 2001:db8:100::1`);
    expect(agent!.policy?.lastResult).toMatchObject({ ok: true, reason: 'Applied', pods: 1 });

    const del = await agent!.handlers.handle({ ...add('web'), command: 'DEL' });
    expect(del.ok).toBe(true);
    await eventually('the pod out of the table', () => !hasPod(nft.last, veth('web')));
  });

  it('when the rules cannot be applied, the ADD fails and nothing is left', async () => {
    put(PODS, { ...pod('web', { app: 'web' }, []), spec: { nodeName: 'node-a', containers: [] } });
    await eventually('caches settled', () => agent!.policy?.lastResult?.ok);
    const before = nft.last;
    nft.failWith = new Error('nft: Error: Could not process rule: No buffer space available');
    const r = await agent!.handlers.handle(add('web'));
    expect(r).toMatchObject({
      ok: false,
      error: {
        code: CniErrorCode.SetupFailed,
        msg: expect.stringMatching(/NetworkPolicy for the new pod: nft: .*No buffer space/),
      },
    });
    expect(agent!.store.entries()).toEqual([]);
    expect(datapath.hostState().links.filter((l) => l.kind === 'veth')).toEqual([]);
    expect(agent!.nodeConfig.current()!.allocator.allocations()).toEqual([]);
    expect(agent!.policy?.lastResult).toMatchObject({ ok: false, reason: 'ApplyFailed' });
    // The kernel still has the table from before, and the next pass leaves the pod out.
    nft.failWith = undefined;
    await agent!.policy!.resync();
    expect(nft.last).toBe(before);
    expect(hasPod(nft.last, veth('web'))).toBe(false);
  });
});
