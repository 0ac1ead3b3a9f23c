// flock first in a conflist, the CNI project's reference plugins after it (bandwidth, tuning;
// scripts/build-cni-plugins.sh), all driven by libcni (cnitool) in a node namespace as a
// container runtime drives them: flock's ADD result is the prevResult they work from. The agent
// side is the agent's own: CniHandlers over the real socket server, IprouteDatapath wiring the
// pod into the node namespace, a real AllocationStore. Bandwidth limits are measured with real
// TCP traffic between the pod and the node, against a pod of the same chain without limits.
import { mkdir, mkdtemp, readdir, rm, rmdir, stat, writeFile } from 'node:fs/promises';
import { randomBytes } from 'node:crypto';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { flockConflist, silentLogger, type CniResult, type CniVersion } from '@flock/api';
import { nodeConfig, pod } from '@flock/api/testing';
import { AddressAllocator } from '@flock/ipam';
import { cniPluginsDir, requireKernelTier, tcpRate, type Netns } from '@flock/testkit';
import { installPlugin, type PluginInstall } from '../../testing/plugin-process.js';
import { tempSocketPath } from '../../testing/cni-server.js';
import { testClaims } from '../../testing/claims.js';
import { KernelHarness } from '../../testing/datapath/harness.js';
import { TestNode } from '../../testing/node-harness.js';
import { ipJson } from '../../testing/datapath/probes.js';
import { CniHandlers } from '../cni/handlers.js';
import { hostVethName } from '../datapath/index.js';
import { AllocationStore } from '../store/index.js';
import { startCniServer, type CniServer } from './server.js';

const LIBCNI_DIR = '/var/lib/cni';
const LIBCNI_CACHE = `${LIBCNI_DIR}/results`;
const network = `flock-chain-${randomBytes(3).toString('hex')}`;
/** The limit both ways: 8 Mbit/s (1 MB/s), a burst of 1 Mbit (what tbf lets through at once). */
const RATE_BITS = 8_000_000;
const BURST_BITS = 1_000_000;
const LIMIT = RATE_BITS / 8; // bytes per second
const NODE_IP = '2001:db8:ffff::1'; // KernelHarness's node address
const HOP_LIMIT = '33'; // what tuning sets on the pod's eth0

interface ChainPod {
  /** The conflist (network) it is added to. */
  network: string;
  ns: Netns;
  veth: string;
  ip6: string;
  /** CAP_ARGS: the runtime's capability arguments (containerd's from the pod's annotations). */
  capArgs?: string;
}

let libcniDirExisted = true;
let h: KernelHarness;
let dir: string;
let plugin: PluginInstall;
let plugins: string;
let store: AllocationStore;
let server: CniServer | undefined;
let socket: Awaited<ReturnType<typeof tempSocketPath>> | undefined;
let limited: ChainPod;
let unlimited: ChainPod;
let addResult: CniResult;

const capArgs = JSON.stringify({
  bandwidth: {
    ingressRate: RATE_BITS,
    ingressBurst: BURST_BITS,
    egressRate: RATE_BITS,
    egressBurst: BURST_BITS,
  },
});

/** cnitool in the node's namespace, where a runtime runs plugins (bandwidth looks for the veth there). */
function cnitool(command: 'add' | 'check' | 'del' | 'status', p: ChainPod) {
  return h.node.exec('cnitool', [command, p.network, p.ns.path], {
    env: {
      NETCONFPATH: join(dir, 'net.d'),
      CNI_PATH: `${plugin.dir}:${plugins}`,
      FLOCK_NODE: process.execPath,
      // IgnoreUnknown: the reference plugins refuse arguments they do not know (containerd sends it).
      CNI_ARGS: 'IgnoreUnknown=1;K8S_POD_NAMESPACE=default;K8S_POD_NAME=web',
      CNI_IFNAME: 'eth0',
      CAP_ARGS: p.capArgs ?? '',
    },
    okCodes: [0, 1],
    timeoutMs: 60_000,
  });
}

async function newPod(limits: boolean, net = network): Promise<ChainPod> {
  const ns = await h.newPod();
  const veth = hostVethName(await TestNode.cnitoolContainerId(ns.path), 'eth0');
  return { network: net, ns, veth, ip6: '', ...(limits ? { capArgs } : {}) };
}

/** flock, then bandwidth and tuning: a conflist of one spec version, or of all (the shipped form). */
async function writeConflist(name: string, cniVersion?: CniVersion): Promise<void> {
  const conflist = flockConflist({
    name,
    socketPath: socket!.socketPath,
    timeoutMs: 30_000,
    ...(cniVersion ? { cniVersion } : {}),
    chained: [
      { type: 'bandwidth', capabilities: { bandwidth: true } },
      {
        type: 'tuning',
        sysctl: { 'net.ipv6.conf.IFNAME.hop_limit': HOP_LIMIT },
        dataDir: join(dir, 'tuning'),
      },
    ],
  });
  await mkdir(join(dir, 'net.d'), { recursive: true });
  await writeFile(join(dir, 'net.d', `${name}.conflist`), JSON.stringify(conflist));
}

const tc = async (dev: string) =>
  JSON.parse((await h.node.exec('tc', ['-json', 'qdisc', 'show', 'dev', dev])).stdout) as {
    kind: string;
    root?: boolean;
  }[];
const ifbLinks = async () =>
  (await ipJson<{ ifname: string }[]>(h.node, ['link', 'show', 'type', 'ifb'])).map(
    (l) => l.ifname,
  );

beforeAll(async () => {
  requireKernelTier('cnitool', 'tc');
  plugins = cniPluginsDir('bandwidth', 'tuning');
  libcniDirExisted = await stat(LIBCNI_DIR).then(
    () => true,
    () => false,
  );
  dir = await mkdtemp(join(tmpdir(), 'flock-chain-'));
  plugin = await installPlugin(join(dir, 'bin'));
  h = await KernelHarness.create();
  store = new AllocationStore(join(dir, 'store.json'));
  await store.load();
  const config = nodeConfig({ ipAlgo: 'sequential', spec: { cidr4: '192.0.2.16/28' } });
  const allocator = AddressAllocator.create({
    cidr6: config.spec.cidr6,
    cidr4: config.spec.cidr4!,
    pinnedCIDRs: [],
  });
  if (!allocator.ok) throw new Error(allocator.error);
  const handlers = new CniHandlers({
    store,
    datapath: h.datapath,
    node: () => ({ nodeConfig: config, allocator: allocator.value }),
    pods: { get: async (namespace, name) => pod({ namespace, name }) },
    claims: testClaims(),
    logger: silentLogger,
  });
  socket = await tempSocketPath();
  server = await startCniServer({
    socketPath: socket.socketPath,
    handle: (r) => handlers.handle(r),
  });
  await writeConflist(network);
  limited = await newPod(true);
  unlimited = await newPod(false);
});

afterAll(async () => {
  await server?.close();
  await socket?.cleanup();
  await h?.destroy();
  if (dir) await rm(dir, { recursive: true, force: true });
  // libcni's result cache is the only thing outside our own directories: drop our entries.
  const cached = await readdir(LIBCNI_CACHE).catch(() => [] as string[]);
  for (const f of cached.filter((f) => f.includes(network)))
    await rm(join(LIBCNI_CACHE, f), { force: true });
  if (!libcniDirExisted) for (const d of [LIBCNI_CACHE, LIBCNI_DIR]) await rmdir(d).catch(() => {});
});

describe('plugins chained after flock (bandwidth, tuning) under libcni', () => {
  it('ADD: flock’s result is their prevResult; bandwidth shapes the veth, tuning the pod', async () => {
    for (const p of [limited, unlimited]) {
      const add = await cnitool('add', p);
      expect(add.code, add.stdout + add.stderr).toBe(0);
      const result = JSON.parse(add.stdout) as CniResult;
      p.ip6 = result.ips!.find((ip) => ip.address.includes(':'))!.address.replace('/128', '');
      if (p === limited) addResult = result;
    }
    // The chain's result: flock's interfaces (host veth, the pod's eth0 in its sandbox), then
    // bandwidth's ifb; every IP on eth0 (index 1), the default routes.
    const mac = async (ns: Netns, dev: string) =>
      (await ipJson<{ address: string }[]>(ns, ['link', 'show', 'dev', dev]))[0]?.address;
    const [host, eth0, ifb, ...rest] = addResult.interfaces!;
    expect(host).toEqual({ name: limited.veth, mac: await mac(h.node, limited.veth) });
    expect(eth0).toEqual({
      name: 'eth0',
      mac: await mac(limited.ns, 'eth0'),
      sandbox: limited.ns.path,
    });
    expect(ifb?.name).toMatch(/^bwp/);
    expect(rest).toEqual([]);
    expect(addResult.ips!.map((ip) => ip.interface)).toEqual([1, 1]);
    expect(addResult.routes!.map((r) => r.dst).sort()).toEqual(['0.0.0.0/0', '::/0']);
    // bandwidth found the host veth from the result: tbf on it (ingress) and on its ifb (egress).
    expect((await tc(limited.veth)).find((q) => q.root)?.kind).toBe('tbf');
    expect((await tc(ifb!.name)).find((q) => q.root)?.kind).toBe('tbf');
    expect(await ifbLinks()).toEqual([ifb!.name]);
    // Without limits bandwidth changes nothing.
    expect((await tc(unlimited.veth)).find((q) => q.root)?.kind).not.toBe('tbf');
    // tuning found eth0 in the sandbox.
    for (const p of [limited, unlimited]) {
      const hop = await p.ns.exec('sysctl', ['-n', 'net.ipv6.conf.eth0.hop_limit']);
      expect(hop.stdout.trim()).toBe(HOP_LIMIT);
    }
  });

  it('real traffic: the limited pod gets its rate both ways, the other one far more', async () => {
    const rates = {
      'node → limited pod (ingress)': await tcpRate(h.node, limited.ns, limited.ip6),
      'limited pod → node (egress)': await tcpRate(limited.ns, h.node, NODE_IP),
      'node → unlimited pod': await tcpRate(h.node, unlimited.ns, unlimited.ip6),
      'unlimited pod → node': await tcpRate(unlimited.ns, h.node, NODE_IP),
    };
    const mb = Object.fromEntries(
      Object.entries(rates).map(([k, v]) => [k, `${(v / 1e6).toFixed(3)} MB/s`]),
    );
    console.log(`limit ${LIMIT / 1e6} MB/s (${RATE_BITS / 1e6} Mbit/s):`, mb);
    for (const r of [rates['node → limited pod (ingress)'], rates['limited pod → node (egress)']]) {
      expect(r).toBeGreaterThan(LIMIT * 0.7);
      expect(r).toBeLessThan(LIMIT * 1.3);
    }
    expect(rates['node → unlimited pod']).toBeGreaterThan(
      rates['node → limited pod (ingress)'] * 10,
    );
    expect(rates['unlimited pod → node']).toBeGreaterThan(
      rates['limited pod → node (egress)'] * 10,
    );
  });

  it('CHECK and STATUS run through the chain; bandwidth’s CHECK sees its ifb gone', async () => {
    for (const p of [limited, unlimited]) {
      const check = await cnitool('check', p);
      expect(check.code, check.stdout + check.stderr).toBe(0);
    }
    const status = await cnitool('status', limited);
    expect(status.code, status.stdout + status.stderr).toBe(0);
    // bandwidth's CHECK got past finding the host veth in flock's result: without its ifb it fails.
    const [ifb] = await ifbLinks();
    await h.node.exec('ip', ['link', 'del', 'dev', ifb!]);
    const broken = await cnitool('check', limited);
    expect(broken.code).toBe(1);
    expect(broken.stderr).toMatch(/get ifb device: Link not found/);
  });

  it('DEL through the chain removes the ifb, the veths, tuning’s backup and the allocations', async () => {
    for (const p of [limited, unlimited]) {
      const del = await cnitool('del', p);
      expect(del.code, del.stdout + del.stderr).toBe(0);
    }
    expect(await ifbLinks()).toEqual([]);
    const veths = await ipJson<{ ifname: string }[]>(h.node, ['link', 'show', 'type', 'veth']);
    expect(veths.map((l) => l.ifname)).toEqual([]);
    expect(store.entries()).toEqual([]);
    expect(await readdir(join(dir, 'tuning')).catch(() => [])).toEqual([]);
    // DEL again (a runtime retries): every plugin of the chain answers success.
    const again = await cnitool('del', limited);
    expect(again.code, again.stdout + again.stderr).toBe(0);
  });
});

describe('older callers: the converted result is a prevResult the plugins after flock can use', () => {
  for (const version of ['1.0.0', '0.4.0'] as const) {
    it(`${version}: ADD, CHECK and DEL through flock, bandwidth and tuning`, async () => {
      const net = `${network}-${version.replaceAll('.', '')}`;
      await writeConflist(net, version);
      const p = await newPod(true, net);
      const add = await cnitool('add', p);
      expect(add.code, add.stdout + add.stderr).toBe(0);
      const result = JSON.parse(add.stdout) as {
        cniVersion: string;
        interfaces: { name: string; sandbox?: string }[];
        ips: { interface: number; version?: string }[];
      };
      expect(result.cniVersion).toBe(version);
      expect(result.interfaces.map((i) => i.sandbox)).toEqual([undefined, p.ns.path, undefined]);
      expect(result.ips.map((ip) => result.interfaces[ip.interface]?.name)).toEqual([
        'eth0',
        'eth0',
      ]);
      if (version === '0.4.0') expect(result.ips.map((ip) => ip.version)).toEqual(['6', '4']);
      expect((await tc(p.veth)).find((q) => q.root)?.kind).toBe('tbf');
      const hop = await p.ns.exec('sysctl', ['-n', 'net.ipv6.conf.eth0.hop_limit']);
      expect(hop.stdout.trim()).toBe(HOP_LIMIT);
      const check = await cnitool('check', p);
      expect(check.code, check.stdout + check.stderr).toBe(0);
      const del = await cnitool('del', p);
      expect(del.code, del.stdout + del.stderr).toBe(0);
      expect(await ifbLinks()).toEqual([]);
      expect(store.entries()).toEqual([]);
    });
  }
});
