// A store write that fails for real: the allocation store on a 64 KiB tmpfs of the test's own
// (mounted on a directory in its temp dir, unmounted afterwards), filled up (ENOSPC) and then
// remounted read-only (EROFS) under the running agent process. ADD must fail with a clear CNI
// error (code 5), the store file must keep its bytes, the kernel must hold nothing of the
// failed ADD; DEL must fail cleanly too, leaving the pod wired; and all recovers once the disk
// does.
import { mkdir, mkdtemp, readFile, readdir, rm, statfs, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CniErrorCode } from '@flock/api';
import { nodeConfig } from '@flock/api/testing';
import { run } from '@flock/exec';
import { NODECONFIGS, type HttpTransport } from '@flock/kube';
import { Netns, eventually, requireKernelTier, type ControlPlane } from '@flock/testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { invokePlugin } from '../plugin-process.js';
import { hostVethName } from '../../src/datapath/index.js';
import { TestNode } from '../node-harness.js';
import { createTestPod, startTestCluster } from '../test-cluster.js';
import {
  kernelViolations,
  loadStore,
  policyAndBirdViolations,
  type CrashSlot,
} from '../crash-invariants.js';

const CIDR6 = '2001:db8:100::/64';
const CIDR4 = '192.0.2.16/28';

let cp: ControlPlane;
let api: HttpTransport;
let node: TestNode;
let nodeNs: Netns;
let dir: string;
let disk: string;
let mounted = false;
const slots: (CrashSlot & { uid: string })[] = [];

async function createSlot(name: string): Promise<CrashSlot & { uid: string }> {
  const uid = await createTestPod(api, { name, nodeName: 'node-a' });
  const ns = await Netns.create('sfail');
  const containerID = await TestNode.cnitoolContainerId(ns.path);
  const slot = {
    name,
    ns,
    containerID,
    veth: hostVethName(containerID, 'eth0'),
    uid: uid,
  };
  slots.push(slot);
  return slot;
}

const storePath = () => join(disk, 'allocations.json');
const cni = (command: 'add' | 'del', s: CrashSlot & { uid: string }) =>
  node.cnitool(command, s.ns.path, { namespace: 'default', name: s.name, uid: s.uid });

/** Run the plugin itself, as the runtime does, and return the CNI error it printed. */
async function cniError(command: 'add' | 'del', s: CrashSlot & { uid: string }) {
  const plugin = {
    dir: node.binDir,
    launcher: join(node.binDir, 'flock'),
    bundle: join(node.binDir, 'flock.mjs'),
    node: process.execPath,
  };
  const config = { cniVersion: '1.1.0', name: 'flock', type: 'flock', socketPath: node.socketPath };
  const r = await invokePlugin(
    plugin,
    {
      CNI_COMMAND: command.toUpperCase(),
      CNI_CONTAINERID: s.containerID,
      CNI_NETNS: s.ns.path,
      CNI_IFNAME: 'eth0',
      CNI_ARGS: `K8S_POD_NAMESPACE=default;K8S_POD_NAME=${s.name};K8S_POD_UID=${s.uid}`,
    },
    JSON.stringify(config),
  );
  expect(r.code, `${command} ${s.name} should have failed: ${r.stdout}`).toBe(1);
  return { code: Number(r.output?.['code']), text: String(r.output?.['msg']) };
}

/** Nothing of a failed command anywhere: the kernel, the policy table and bird.conf follow the store. */
async function consistent(): Promise<string[]> {
  const committed = (await loadStore(storePath())).filter((e) => e.state === 'committed');
  const input = {
    node: nodeNs,
    slots,
    storePath: storePath(),
    birdConfigPath: node.birdConfigPath,
    aggregates: [CIDR6, CIDR4],
  };
  const kernel = await kernelViolations(input, committed);
  const rest = await eventually(
    'policy table and bird.conf follow the store',
    async () => {
      const v = await policyAndBirdViolations(input, committed);
      return v.length ? false : v;
    },
    { timeoutMs: 10_000 },
  ).catch(() => policyAndBirdViolations(input, committed));
  return [...kernel, ...rest];
}

/** Fill the tmpfs to the last block. */
async function fill(): Promise<void> {
  await writeFile(join(disk, 'filler'), Buffer.alloc(1 << 20)).catch((e: NodeJS.ErrnoException) => {
    if (e.code !== 'ENOSPC') throw e;
  });
  expect((await statfs(disk)).bavail).toBe(0);
}

beforeAll(async () => {
  requireKernelTier('cnitool', 'nsenter', 'nft', 'mount', 'umount');
  let apply;
  ({ cp, api, apply } = await startTestCluster('node-a'));
  await apply(
    NODECONFIGS,
    nodeConfig({ ipAlgo: 'sequential', spec: { cidr6: CIDR6, cidr4: CIDR4 } }),
  );
  nodeNs = await Netns.create('snode');
  dir = await mkdtemp(join(tmpdir(), 'flock-store-fail-'));
  disk = join(dir, 'disk');
  await mkdir(disk, { mode: 0o700 });
  // A tiny tmpfs of our own, on our own directory: the machine's mounts are not touched.
  await run('mount', ['-t', 'tmpfs', '-o', 'size=64k,mode=0700', 'flock-test-store', disk]);
  mounted = true;
  node = new TestNode({
    cp,
    nodeName: 'node-a',
    netns: nodeNs,
    dir,
    extraArgs: ['--store', storePath()],
  });
  await node.installPlugin();
  await node.startAgent();
}, 300_000);

afterAll(async () => {
  await node?.agent?.stop();
  if (mounted) await run('umount', [disk]).catch(() => run('umount', ['-l', disk]));
  for (const s of slots) await s.ns.destroy();
  await nodeNs?.destroy();
  await cp?.stop();
  if (dir) await rm(dir, { recursive: true, force: true });
});

describe('allocation store on a full or read-only disk', () => {
  it('full disk: ADD and DEL fail with code 5, the store keeps its bytes, nothing half-applied', async () => {
    const wired = await createSlot('wired');
    await cni('add', wired);
    const refused = await createSlot('refused');
    await fill();
    const before = await readFile(storePath());

    const add = await cniError('add', refused);
    expect(add.code).toBe(CniErrorCode.IoFailure);
    expect(add.text).toMatch(/allocation store .*no space left on device/i);
    const del = await cniError('del', wired);
    expect(del.code).toBe(CniErrorCode.IoFailure);
    expect(del.text).toMatch(/no space left on device/i);

    expect(await readFile(storePath())).toEqual(before);
    expect((await readdir(disk)).sort()).toEqual(['allocations.json', 'filler']); // no temp file
    expect(await consistent()).toEqual([]);
    expect((await loadStore(storePath())).map((e) => [e.pod, e.state])).toEqual([
      ['wired', 'committed'],
    ]);
    expect(node.agent!.child.exitCode).toBeNull(); // still serving

    // Space again: both go through.
    await rm(join(disk, 'filler'));
    await cni('add', refused);
    await cni('del', wired);
    expect((await loadStore(storePath())).map((e) => e.pod)).toEqual(['refused']);
    expect(await consistent()).toEqual([]);
  });

  it('read-only disk: ADD fails with code 5 naming the cause, and recovers after remount', async () => {
    const ro = await createSlot('readonly');
    const before = await readFile(storePath());
    await run('mount', ['-o', 'remount,ro', disk]);
    try {
      const add = await cniError('add', ro);
      expect(add.code).toBe(CniErrorCode.IoFailure);
      expect(add.text).toMatch(/allocation store .*read-only file system/i);
      expect(await readFile(storePath())).toEqual(before);
      expect(await consistent()).toEqual([]);
    } finally {
      await run('mount', ['-o', 'remount,rw', disk]);
    }
    await cni('add', ro);
    expect((await loadStore(storePath())).map((e) => e.pod).sort()).toEqual([
      'readonly',
      'refused',
    ]);
    expect(await consistent()).toEqual([]);
  });
});
