// The agent and the CNI plugin for real: the agent process against a real API server, pods
// wired in real network namespaces by the reference runtime client cnitool.
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { nodeConfig } from '@flock/api/testing';
import { type HttpTransport, NODECONFIGS, NODES, objectPath } from '@flock/kube';
import { Netns, eventually, requireKernelTier, type ControlPlane } from '@flock/testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { hostVethName } from './datapath/index.js';
import { TestNode } from '../testing/node-harness.js';
import { createTestPod, startTestCluster, type TestCluster } from '../testing/test-cluster.js';

let cp: ControlPlane;
let api: HttpTransport;
let node: TestNode;
let nodeNs: Netns;
let dir: string;
const podNamespaces: Netns[] = [];

let apply: TestCluster['apply'];

async function createPod(
  name: string,
  annotations: Record<string, string> = {},
): Promise<{ uid: string; ns: Netns }> {
  // Pod admission sees the new ServiceAccount through its informer: retry until it does.
  const uid = await createTestPod(api, { name, nodeName: 'node-a', annotations });
  const ns = await Netns.create('pod');
  podNamespaces.push(ns);
  return { uid: uid, ns };
}

const inNode = (file: string, args: string[]) => nodeNs.exec(file, args);
const jsonOf = async (ns: Netns, args: string[]) =>
  JSON.parse((await ns.exec('ip', ['-j', ...args])).stdout) as unknown[];

beforeAll(async () => {
  requireKernelTier('cnitool', 'nsenter', 'ping');
  ({ cp, api, apply } = await startTestCluster('node-a'));
  nodeNs = await Netns.create('node');
  // The node's own addresses (a real node has them on its uplink): the source of its probes.
  await nodeNs.exec('ip', ['link', 'add', 'uplink', 'type', 'veth', 'peer', 'name', 'uplink-peer']);
  await nodeNs.exec('ip', ['link', 'set', 'uplink', 'up']);
  await nodeNs.exec('ip', ['addr', 'add', '198.51.100.10/32', 'dev', 'uplink']);
  await nodeNs.exec('ip', ['addr', 'add', '2001:db8:ffff::10/128', 'dev', 'uplink', 'nodad']);
  dir = await mkdtemp(join(tmpdir(), 'flock-agent-it-'));
  node = new TestNode({ cp, nodeName: 'node-a', netns: nodeNs, dir });
  await node.installPlugin();
}, 300_000);

afterAll(async () => {
  await node?.agent?.stop();
  for (const ns of podNamespaces) await ns.destroy();
  await nodeNs?.destroy();
  await cp?.stop();
  if (dir) await rm(dir, { recursive: true, force: true });
});

describe('agent + CNI plugin on a real node namespace and API server', () => {
  it('STATUS is 50 before the NodeConfig exists and 0 after', async () => {
    const starting = node.startAgent();
    starting.catch(() => undefined);
    const before = await node.cnitool('status', '/run/netns/none').then(
      () => 'ok',
      (e: { stdout?: string; stderr?: string; message: string }) => e.message,
    );
    expect(before).toMatch(/"code":\s*50|code 50|not reachable|not ready/);
    await apply(
      NODECONFIGS,
      nodeConfig({ ipAlgo: 'sequential', spec: { cidr4: '192.0.2.16/28' } }),
    );
    await starting;
    await node.cnitool('status', '/run/netns/none');
  });

  it('wires a pod: addresses and routes inside and outside, ping and TCP from the node', async () => {
    const { uid, ns } = await createPod('web');
    const out = await node.cnitool('add', ns.path, { namespace: 'default', name: 'web', uid });
    const result = JSON.parse(out.stdout) as { ips: { address: string }[] };
    expect(result.ips.map((i) => i.address)).toEqual(['2001:db8:100::1/128', '192.0.2.17/32']);

    const addrs = (await jsonOf(ns, ['addr', 'show', 'dev', 'eth0'])) as {
      addr_info: { local: string }[];
    }[];
    expect(addrs[0]!.addr_info.map((a) => a.local).sort()).toEqual([
      '192.0.2.17',
      '2001:db8:100::1',
    ]);
    const podRoutes6 = (await jsonOf(ns, ['-6', 'route'])) as { dst: string; gateway?: string }[];
    expect(podRoutes6).toContainEqual(
      expect.objectContaining({ dst: 'default', gateway: 'fe80::1' }),
    );
    const veth = hostVethName(await TestNode.cnitoolContainerId(ns.path), 'eth0');
    const hostRoutes = (await jsonOf(nodeNs, ['-6', 'route', 'show', '2001:db8:100::1/128'])) as {
      dev: string;
    }[];
    expect(hostRoutes[0]?.dev).toBe(veth);
    const blackholes = (await jsonOf(nodeNs, ['-6', 'route', 'show', 'type', 'blackhole'])) as {
      dst: string;
    }[];
    expect(blackholes.map((r) => r.dst)).toContain('2001:db8:100::/64');

    await inNode('ping', ['-6', '-c', '1', '-W', '2', '2001:db8:100::1']);
    await inNode('ping', ['-c', '1', '-W', '2', '192.0.2.17']);
    const server = ns.spawn(process.execPath, [
      '-e',
      "require('net').createServer((s)=>s.end('hello from web\\n')).listen(8080, '::')",
    ]);
    await eventually('TCP from the node to the pod', async () => {
      const r = await inNode(process.execPath, [
        '-e',
        "const s=require('net').connect(8080,'2001:db8:100::1');s.on('data',d=>{process.stdout.write(d);s.end()});s.on('error',e=>{console.error(e.message);process.exit(1)})",
      ]);
      return r.stdout.includes('hello from web');
    });
    server.kill();
  });

  it('keeps the Node NetworkUnavailable=False (FlockReady)', async () => {
    const condition = await eventually('the condition', async () => {
      const n = (await api.request({ method: 'GET', path: objectPath(NODES, 'node-a') })) as {
        status?: { conditions?: { type: string; status: string; reason: string }[] };
      };
      return n.status?.conditions?.find((c) => c.type === 'NetworkUnavailable');
    });
    expect(condition).toMatchObject({ status: 'False', reason: 'FlockReady' });
  });

  it('CHECK reports a deleted route; DEL twice succeeds and removes everything', async () => {
    const { uid, ns } = await createPod('checked');
    const out = JSON.parse(
      (await node.cnitool('add', ns.path, { namespace: 'default', name: 'checked', uid })).stdout,
    ) as { ips: { address: string }[] };
    await node.cnitool('check', ns.path, { namespace: 'default', name: 'checked', uid });
    const ip6 = out.ips[0]!.address;
    await inNode('ip', ['-6', 'route', 'del', ip6]);
    await expect(
      node.cnitool('check', ns.path, { namespace: 'default', name: 'checked', uid }),
    ).rejects.toThrow(new RegExp(ip6.replace('/128', '')));
    await node.cnitool('del', ns.path, { namespace: 'default', name: 'checked', uid });
    await node.cnitool('del', ns.path, { namespace: 'default', name: 'checked', uid });
    const veth = hostVethName(await TestNode.cnitoolContainerId(ns.path), 'eth0');
    expect((await inNode('ip', ['-o', 'link'])).stdout).not.toContain(veth);
    const store = JSON.parse(await readFile(node.storePath, 'utf8')) as {
      entries: { pod: string }[];
    };
    expect(store.entries.map((e) => e.pod)).toEqual(['web']);
  });

  it('GC removes attachments the runtime no longer lists', async () => {
    const { uid, ns } = await createPod('collected');
    await node.cnitool('add', ns.path, { namespace: 'default', name: 'collected', uid });
    // cnitool's GC passes no valid attachments: every attachment goes.
    await node.cnitool('gc', ns.path);
    const store = JSON.parse(await readFile(node.storePath, 'utf8')) as { entries: unknown[] };
    expect(store.entries).toEqual([]);
    expect((await inNode('ip', ['-o', 'link', 'show', 'type', 'veth'])).stdout).not.toMatch(
      /flock[0-9a-f]{8}/,
    );
  });

  it('an agent killed while an ADD is pending leaves nothing after its restart, and the address is free', async () => {
    await node.agent!.stop();
    await node.startAgent(['--test-faults', 'after-datapath']);
    const { uid, ns } = await createPod('crashy');
    await expect(
      node.cnitool('add', ns.path, { namespace: 'default', name: 'crashy', uid }),
    ).rejects.toThrow();
    expect(await node.agent!.exited).toBe('SIGKILL');
    const leftover = JSON.parse(await readFile(node.storePath, 'utf8')) as {
      entries: { state: string; ip6: string }[];
    };
    expect(leftover.entries).toEqual([expect.objectContaining({ state: 'pending' })]);
    const lost = leftover.entries[0]!.ip6;
    const veth = hostVethName(await TestNode.cnitoolContainerId(ns.path), 'eth0');
    expect((await inNode('ip', ['-o', 'link'])).stdout).toContain(veth);

    await node.startAgent();
    expect((await inNode('ip', ['-o', 'link'])).stdout).not.toContain(veth);
    expect(JSON.parse(await readFile(node.storePath, 'utf8')).entries).toEqual([]);
    const again = JSON.parse(
      (await node.cnitool('add', ns.path, { namespace: 'default', name: 'crashy', uid })).stdout,
    ) as { ips: { address: string }[] };
    expect(again.ips[0]!.address).toBe(`${lost}/128`);
  });
});
