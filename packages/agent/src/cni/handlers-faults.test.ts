// The order of the handlers' fault points against the store and the kernel, ADD's datapath
// and policy steps running at once, and a store write that fails at commit (a disk that filled
// up during the ADD).
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CniErrorCode, silentLogger, type AgentRequest } from '@flock/api';
import { nodeConfig, pod } from '@flock/api/testing';
import { nodeFileSystem, type FileSystem } from '@flock/exec';
import { AddressAllocator } from '@flock/ipam';
import { AllocationStore } from '../store/index.js';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { FakeDatapath } from '../../testing/datapath/fake.js';
import type { HandlerFaultPoint } from '../core/faults.js';
import type { NodeState } from '../node/node-config.js';
import { CniHandlers, type CniHooks } from './handlers.js';
import { testClaims } from '../../testing/claims.js';

let dir: string;
let datapath: FakeDatapath;
let node: NodeState;

async function setup(fs: FileSystem = nodeFileSystem, hooks?: CniHooks) {
  const store = new AllocationStore(join(dir, 'store.json'), { fileSystem: fs });
  await store.load();
  const seen: string[] = [];
  const handlers = new CniHandlers({
    store,
    datapath,
    claims: testClaims(),
    node: () => node,
    pods: {
      get: async (namespace, name) => pod({ namespace, name, uid: 'uid-web' }),
    },
    logger: silentLogger,
    ...(hooks ? { hooks } : {}),
    fault: (point: HandlerFaultPoint) => {
      const e = store.get('c1', 'eth0');
      seen.push(`${point}: ${e?.state ?? 'none'}, veth ${datapath.hostVethNames().length}`);
    },
  });
  return { store, handlers, seen };
}

beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'flock-faults-'));
  datapath = new FakeDatapath();
  const alloc = AddressAllocator.create({ cidr6: '2001:db8:100::/64', cidr4: '192.0.2.16/28' });
  if (!alloc.ok) throw new Error(alloc.error);
  node = { nodeConfig: nodeConfig({ spec: { cidr4: '192.0.2.16/28' } }), allocator: alloc.value };
});
afterEach(() => rm(dir, { recursive: true, force: true }));

const request = (command: AgentRequest['command']): AgentRequest => ({
  command,
  containerID: 'c1',
  ifName: 'eth0',
  netns: datapath.createNetns('/var/run/netns/p1'),
  args: { K8S_POD_NAMESPACE: 'default', K8S_POD_NAME: 'web' },
  config: { cniVersion: '1.1.0', name: 'flock', type: 'flock' },
});

describe('CNI fault points', () => {
  it('ADD: pending before any kernel work, committed only after it', async () => {
    const { handlers, seen } = await setup();
    expect((await handlers.handle(request('ADD'))).ok).toBe(true);
    // The datapath and the policy run at once: their points come in either order.
    expect(seen[0]).toBe('after-pending: pending, veth 0');
    expect(seen.slice(1, 3).sort()).toEqual([
      'after-datapath: pending, veth 1',
      expect.stringMatching(/^after-policy: pending, veth [01]$/),
    ]);
    expect(seen.slice(3)).toEqual([
      'before-commit: pending, veth 1',
      'after-commit: committed, veth 1',
    ]);
  });

  it('ADD: the datapath is done while the policy step still runs; commit waits for it', async () => {
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    const { handlers, seen, store } = await setup(nodeFileSystem, {
      beforeCommit: async () => {
        seen.push('policy started');
        await gate;
      },
    });
    const added = handlers.handle(request('ADD'));
    await vi.waitFor(() => expect(seen).toContain('after-datapath: pending, veth 1'));
    expect(seen).toContain('policy started');
    expect(store.get('c1', 'eth0')?.state).toBe('pending');
    release();
    expect((await added).ok).toBe(true);
    expect(seen.at(-1)).toBe('after-commit: committed, veth 1');
  });

  it('ADD: a datapath failure is undone only after the running policy step has ended', async () => {
    datapath.failAt('pod-addresses');
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    const changed: string[] = [];
    let policyRunning = false;
    const { handlers, store } = await setup(nodeFileSystem, {
      beforeCommit: async () => {
        policyRunning = true;
        await gate;
      },
      changed: () => changed.push(`changed: entry ${store.get('c1', 'eth0')?.state ?? 'none'}`),
    });
    const added = handlers.handle(request('ADD'));
    await vi.waitFor(() => expect(policyRunning).toBe(true));
    await new Promise((r) => setTimeout(r, 20)); // the datapath step fails meanwhile
    // The veth was cleaned up by the datapath itself; the entry waits for the policy step.
    expect(store.get('c1', 'eth0')?.state).toBe('pending');
    release();
    expect(await added).toMatchObject({ ok: false, error: { code: CniErrorCode.SetupFailed } });
    expect(store.entries()).toEqual([]);
    expect(datapath.hostVethNames()).toEqual([]);
    // The policy reconciler hears of the removal (its next pass drops the pod's rules).
    expect(changed).toEqual(['changed: entry none']);
  });

  it('DEL: marked pending before the teardown, removed after it', async () => {
    const { handlers, seen } = await setup();
    await handlers.handle(request('ADD'));
    seen.length = 0;
    expect((await handlers.handle(request('DEL'))).ok).toBe(true);
    expect(seen).toEqual([
      'del-after-mark: pending, veth 1',
      'del-after-datapath: pending, veth 0',
      'del-after-remove: none, veth 0',
    ]);
  });

  it('a store write that fails at commit: error 5, kernel undone, the file keeps the old state', async () => {
    let writes = 0;
    const full: FileSystem = {
      ...nodeFileSystem,
      create: async (path, mode) => {
        // The pending write goes through; from the commit on the disk is full.
        if (++writes >= 2)
          throw Object.assign(new Error('ENOSPC: no space left on device'), { code: 'ENOSPC' });
        return nodeFileSystem.create(path, mode);
      },
    };
    const { handlers } = await setup(full);
    const r = await handlers.handle(request('ADD'));
    expect(r).toMatchObject({
      ok: false,
      error: {
        code: CniErrorCode.IoFailure,
        msg: expect.stringMatching(/allocation store.*ENOSPC/),
      },
    });
    expect(datapath.hostVethNames()).toEqual([]);
    const onDisk = JSON.parse(await readFile(join(dir, 'store.json'), 'utf8')) as {
      entries: { state: string }[];
    };
    expect(onDisk.entries.map((e) => e.state)).toEqual(['pending']); // dropped at the next start
  });
});
