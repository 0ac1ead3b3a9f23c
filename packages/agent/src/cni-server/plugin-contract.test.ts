// The real plugin (bundled from packages/cni, started through its launcher as a runtime would)
// against the real socket server with a scripted handler: every command, the three spec
// versions, and every error the plugin reports.
import { rm } from 'node:fs/promises';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { AgentRequest, AgentResponse, CniResult } from '@flock/api';
import { installPlugin, invokePlugin, type PluginInstall } from '../../testing/plugin-process.js';
import { startCniServer, type CniServer } from './server.js';
import { tempSocketPath } from '../../testing/cni-server.js';

const ADD_RESULT: CniResult = {
  cniVersion: '1.1.0',
  interfaces: [
    { name: 'flock0a1b2c3d', mac: '02:00:00:00:00:01', mtu: 1500 },
    { name: 'eth0', mac: '02:00:00:00:00:02', mtu: 1500, sandbox: '/run/netns/cni-1' },
  ],
  ips: [
    { address: '2001:db8:0:1::5/128', gateway: 'fe80::1', interface: 1 },
    { address: '192.0.2.5/32', gateway: '169.254.1.1', interface: 1 },
  ],
  routes: [
    { dst: '::/0', gw: 'fe80::1' },
    { dst: '0.0.0.0/0', gw: '169.254.1.1' },
  ],
  dns: {},
};

let plugin: PluginInstall;
let tmp: Awaited<ReturnType<typeof tempSocketPath>>;
let server: CniServer;
const seen: AgentRequest[] = [];
/** What the handler answers next, per command (default: success). */
let script: Partial<Record<AgentRequest['command'], () => Promise<AgentResponse>>> = {};

beforeAll(async () => {
  plugin = await installPlugin();
}, 120_000);
afterAll(() => rm(plugin.dir, { recursive: true, force: true }));

beforeEach(async () => {
  tmp = await tempSocketPath();
  seen.length = 0;
  script = {};
  server = await startCniServer({
    socketPath: tmp.socketPath,
    handle: async (req) => {
      seen.push(req);
      const scripted = script[req.command];
      if (scripted) return scripted();
      return req.command === 'ADD' ? { ok: true, result: ADD_RESULT } : { ok: true };
    },
  });
});
afterEach(async () => {
  await server.close();
  await tmp.cleanup();
});

const conf = (version: string, extra: Record<string, unknown> = {}) =>
  JSON.stringify({
    cniVersion: version,
    name: 'flock',
    type: 'flock',
    socketPath: tmp.socketPath,
    ...extra,
  });
const attachment = {
  CNI_CONTAINERID: 'c0ffee42',
  CNI_NETNS: '/run/netns/cni-1',
  CNI_IFNAME: 'eth0',
  CNI_ARGS: 'IgnoreUnknown=1;K8S_POD_NAMESPACE=default;K8S_POD_NAME=web-0;K8S_POD_UID=u-1',
};
const cni = (command: string, stdin: string, env: Record<string, string> = attachment) =>
  invokePlugin(plugin, { CNI_COMMAND: command, ...env }, stdin);

describe('flock CNI plugin: commands', () => {
  it('ADD (1.1.0) forwards the environment and prints the result as the agent gave it', async () => {
    const r = await cni('ADD', conf('1.1.0'));
    expect(r.code).toBe(0);
    expect(r.output).toEqual({ ...ADD_RESULT, cniVersion: '1.1.0' });
    expect(seen).toEqual([
      {
        command: 'ADD',
        containerID: 'c0ffee42',
        netns: '/run/netns/cni-1',
        ifName: 'eth0',
        args: {
          IgnoreUnknown: '1',
          K8S_POD_NAMESPACE: 'default',
          K8S_POD_NAME: 'web-0',
          K8S_POD_UID: 'u-1',
        },
        config: JSON.parse(conf('1.1.0')),
      },
    ]);
  });

  it('ADD (1.0.0) drops the interface MTU, which 1.0.0 does not define', async () => {
    const r = await cni('ADD', conf('1.0.0'));
    expect(r.code).toBe(0);
    expect(r.output?.['cniVersion']).toBe('1.0.0');
    expect(r.output?.['interfaces']).toEqual(ADD_RESULT.interfaces?.map(({ mtu: _m, ...i }) => i));
    expect(r.output?.['ips']).toEqual(ADD_RESULT.ips);
  });

  it('ADD (0.4.0) tags every IP with its version', async () => {
    const r = await cni('ADD', conf('0.4.0'));
    expect(r.code).toBe(0);
    expect(r.output?.['cniVersion']).toBe('0.4.0');
    expect(r.output?.['ips']).toEqual([
      { version: '6', ...ADD_RESULT.ips?.[0] },
      { version: '4', ...ADD_RESULT.ips?.[1] },
    ]);
    expect(r.output?.['routes']).toEqual(ADD_RESULT.routes);
  });

  it('CHECK prints nothing on success and hands the agent a 1.1.0 prevResult', async () => {
    const prev = {
      cniVersion: '0.4.0',
      ips: [{ version: '6', address: '2001:db8:0:1::5/128', interface: 1 }],
    };
    const r = await cni('CHECK', conf('0.4.0', { prevResult: prev }));
    expect(r).toMatchObject({ code: 0, stdout: '' });
    expect(seen[0]?.config.prevResult).toEqual({
      cniVersion: '1.1.0',
      ips: [{ address: '2001:db8:0:1::5/128', interface: 1 }],
    });
  });

  it('CHECK failure is printed as the agent reported it, in the caller version', async () => {
    script.CHECK = async () => ({ ok: false, error: { code: 100, msg: 'veth missing' } });
    const r = await cni('CHECK', conf('1.0.0'));
    expect(r.code).toBe(1);
    expect(r.output).toEqual({ cniVersion: '1.0.0', code: 100, msg: 'veth missing' });
  });

  it('DEL works without CNI_NETNS, and ignores an unusable one', async () => {
    const { CNI_NETNS: _n, ...withoutNetns } = attachment;
    expect(await cni('DEL', conf('1.1.0'), withoutNetns)).toMatchObject({ code: 0, stdout: '' });
    const odd = await cni('DEL', conf('1.1.0'), { ...attachment, CNI_NETNS: 'proc/1/ns net' });
    expect(odd).toMatchObject({ code: 0, stdout: '' });
    expect(odd.stderr).toMatch(/DEL ignores unusable CNI_NETNS/);
    expect(seen.map((s) => [s.command, s.containerID, s.netns])).toEqual([
      ['DEL', 'c0ffee42', undefined],
      ['DEL', 'c0ffee42', undefined],
    ]);
  });

  it('STATUS is quiet when the agent is ready and reports 50 while it is not', async () => {
    expect(await cni('STATUS', conf('1.1.0'), {})).toMatchObject({ code: 0, stdout: '' });
    script.STATUS = async () => ({
      ok: false,
      error: { code: 50, msg: 'flock agent is not ready: waiting for NodeConfig' },
    });
    const r = await cni('STATUS', conf('1.1.0'), {});
    expect(r.code).toBe(1);
    expect(r.output).toEqual({
      cniVersion: '1.1.0',
      code: 50,
      msg: 'flock agent is not ready: waiting for NodeConfig',
    });
    expect(seen.map((s) => [s.command, s.containerID])).toEqual([
      ['STATUS', undefined],
      ['STATUS', undefined],
    ]);
  });

  it('GC passes cni.dev/valid-attachments through to the agent', async () => {
    const valid = [
      { containerID: 'c0ffee42', ifname: 'eth0' },
      { containerID: 'deadbeef', ifname: 'eth0' },
    ];
    const r = await cni('GC', conf('1.1.0', { 'cni.dev/valid-attachments': valid }), {});
    expect(r).toMatchObject({ code: 0, stdout: '' });
    expect(seen[0]?.command).toBe('GC');
    expect(seen[0]?.config['cni.dev/valid-attachments']).toEqual(valid);
  });

  it('VERSION is answered by the plugin alone, echoing the caller version', async () => {
    await server.close();
    for (const [stdin, version] of [
      [conf('1.0.0'), '1.0.0'],
      ['', '1.1.0'],
      ['not json', '1.1.0'],
    ] as const) {
      const r = await cni('VERSION', stdin, {});
      expect(r.code).toBe(0);
      expect(r.output).toEqual({
        cniVersion: version,
        supportedVersions: ['0.4.0', '1.0.0', '1.1.0'],
      });
    }
    server = await startCniServer({
      socketPath: tmp.socketPath,
      handle: async () => ({ ok: true }),
    });
  });
});
