// The plugin driven by libcni itself (cnitool, the CNI project's runtime library and tool),
// as containerd and CRI-O drive it: a conflist per spec version, a real network namespace,
// and the real socket server with a scripted agent. libcni parses every result the plugin
// prints in the conflist's version, caches it and hands it back as prevResult.
import { mkdtemp, readdir, rm, rmdir, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { run } from '@flock/exec';
import { Netns, requireKernelTier, requireTools } from '@flock/testkit';
import {
  flockConflist,
  type AgentRequest,
  type AgentResponse,
  type CniResult,
  type CniVersion,
} from '@flock/api';
import { installPlugin, type PluginInstall } from '../../testing/plugin-process.js';
import { startCniServer, type CniServer } from './server.js';
import { tempSocketPath } from '../../testing/cni-server.js';

const LIBCNI_DIR = '/var/lib/cni';
const LIBCNI_CACHE = `${LIBCNI_DIR}/results`;
let libcniDirExisted = true;
const network = `flock-test-${randomBytes(3).toString('hex')}`;
let plugin: PluginInstall;
let netns: Netns | undefined;
let confDir: string;
let tmp: Awaited<ReturnType<typeof tempSocketPath>>;
let server: CniServer | undefined;
const seen: AgentRequest[] = [];
let addResponse: () => AgentResponse;

function result(sandbox: string): CniResult {
  return {
    cniVersion: '1.1.0',
    interfaces: [
      { name: 'flockc0ffee42', mac: '02:00:00:00:00:01', mtu: 1500 },
      { name: 'eth0', mac: '02:00:00:00:00:02', mtu: 1500, sandbox },
    ],
    ips: [
      { address: '2001:db8:0:1::5/128', gateway: 'fe80::1', interface: 1 },
      { address: '192.0.2.5/32', gateway: '169.254.1.1', interface: 1 },
    ],
    routes: [
      { dst: '::/0', gw: 'fe80::1' },
      { dst: '0.0.0.0/0', gw: '169.254.1.1' },
    ],
  };
}

beforeAll(async () => {
  requireKernelTier();
  requireTools('cnitool');
  libcniDirExisted = await stat(LIBCNI_DIR).then(
    () => true,
    () => false,
  );
  plugin = await installPlugin();
  netns = await Netns.create('flcni');
  confDir = await mkdtemp(join(tmpdir(), 'flock-netconf-'));
  tmp = await tempSocketPath();
  server = await startCniServer({
    socketPath: tmp.socketPath,
    handle: async (req) => {
      seen.push(req);
      return req.command === 'ADD' ? addResponse() : { ok: true };
    },
  });
});
afterAll(async () => {
  await server?.close();
  await netns?.destroy();
  if (plugin) await rm(plugin.dir, { recursive: true, force: true });
  if (confDir) await rm(confDir, { recursive: true, force: true });
  if (tmp) await tmp.cleanup();
  // libcni's result cache is the only thing outside our temp dirs: drop our network's entries.
  const cached = await readdir(LIBCNI_CACHE).catch(() => [] as string[]);
  for (const f of cached.filter((f) => f.includes(network)))
    await rm(join(LIBCNI_CACHE, f), { force: true });
  // ... and the directories, when libcni created them for this test and they are empty now.
  if (!libcniDirExisted)
    for (const dir of [LIBCNI_CACHE, LIBCNI_DIR]) await rmdir(dir).catch(() => {});
});
beforeEach(() => {
  seen.length = 0;
  addResponse = () => ({ ok: true, result: result(netns?.path ?? '') });
});

async function cnitool(command: string, version: CniVersion) {
  await writeFile(
    join(confDir, `${network}.conflist`),
    JSON.stringify(
      flockConflist({
        name: network,
        socketPath: tmp.socketPath,
        timeoutMs: 10_000,
        cniVersion: version,
      }),
    ),
  );
  return run('cnitool', [command, network, netns?.path ?? ''], {
    env: {
      NETCONFPATH: confDir,
      CNI_PATH: plugin.dir,
      FLOCK_NODE: process.execPath,
      CNI_ARGS: 'K8S_POD_NAMESPACE=default;K8S_POD_NAME=web-0',
      CNI_IFNAME: 'eth0',
    },
    okCodes: [0, 1],
    timeoutMs: 30_000,
  });
}

describe('flock CNI plugin under libcni (cnitool)', () => {
  for (const version of ['1.1.0', '1.0.0', '0.4.0'] as const) {
    it(`${version}: add, check, status, gc, del`, async () => {
      const add = await cnitool('add', version);
      expect(add.code, add.stderr).toBe(0);
      const printed = JSON.parse(add.stdout) as Record<string, unknown>;
      const expected = result(netns?.path ?? '');
      expect(printed['cniVersion']).toBe(version);
      expect(printed['ips']).toEqual(
        version === '0.4.0'
          ? expected.ips?.map((ip) => ({ version: ip.address.includes(':') ? '6' : '4', ...ip }))
          : expected.ips,
      );
      expect(seen[0]).toMatchObject({
        command: 'ADD',
        netns: netns?.path,
        ifName: 'eth0',
        args: { K8S_POD_NAMESPACE: 'default', K8S_POD_NAME: 'web-0' },
      });

      for (const command of ['check', 'status', 'gc', 'del']) {
        const r = await cnitool(command, version);
        expect(r.code, `${command}: ${r.stderr}`).toBe(0);
      }
      // libcni sends STATUS and GC only to 1.1.0 plugins; GC first DELs what it has cached.
      expect(seen.map((s) => s.command)).toEqual(
        version === '1.1.0'
          ? ['ADD', 'CHECK', 'STATUS', 'DEL', 'GC', 'DEL']
          : ['ADD', 'CHECK', 'DEL', 'DEL'],
      );
      // CHECK's prevResult is libcni's cached copy of our ADD result, handed to the agent in 1.1.0 form.
      const prev = seen[1]?.config.prevResult as Record<string, unknown>;
      expect(prev['cniVersion']).toBe('1.1.0');
      expect(prev['ips']).toEqual(expected.ips);
      expect(seen[1]?.containerID).toBe(seen[0]?.containerID);
    });
  }

  it('an agent error reaches the runtime with its message', async () => {
    addResponse = () => ({ ok: false, error: { code: 102, msg: 'node address space exhausted' } });
    const r = await cnitool('add', '1.1.0');
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/node address space exhausted/);
    await cnitool('del', '1.1.0');
  });
});
