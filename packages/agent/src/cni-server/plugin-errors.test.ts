// Every error the real plugin reports, with the spec's codes, against the real socket server.
import { mkdir, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { AgentRequest } from '@flock/api';
import { installPlugin, invokePlugin, type PluginInstall } from '../../testing/plugin-process.js';
import { startCniServer, type CniServer } from './server.js';
import { tempSocketPath } from '../../testing/cni-server.js';

let plugin: PluginInstall;
let tmp: Awaited<ReturnType<typeof tempSocketPath>>;
let server: CniServer | undefined;
const seen: AgentRequest[] = [];

beforeAll(async () => {
  plugin = await installPlugin();
}, 120_000);
afterAll(() => rm(plugin.dir, { recursive: true, force: true }));

beforeEach(async () => {
  tmp = await tempSocketPath();
  seen.length = 0;
});
afterEach(async () => {
  await server?.close();
  server = undefined;
  await tmp.cleanup();
});

async function serve(handle: (req: AgentRequest) => Promise<never> | Promise<{ ok: true }>) {
  server = await startCniServer({
    socketPath: tmp.socketPath,
    closeGraceMs: 100,
    handle: (req) => {
      seen.push(req);
      return handle(req);
    },
  });
}

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
};
const cni = (command: string, stdin: string, env: Record<string, string> = attachment) =>
  invokePlugin(plugin, { CNI_COMMAND: command, ...env }, stdin);

/** Exit 1 and exactly one error object on stdout. */
function expectError(r: { code: number; output?: Record<string, unknown> }, code: number) {
  expect(r.code).toBe(1);
  expect(r.output?.['code']).toBe(code);
  expect(typeof r.output?.['msg']).toBe('string');
  return r.output as { cniVersion: string; code: number; msg: string; details?: string };
}

describe('flock CNI plugin: errors from the environment and the configuration', () => {
  beforeEach(() => serve(async () => ({ ok: true })));

  it('4: CNI_COMMAND missing or unknown', async () => {
    expect(expectError(await cni('', conf('1.1.0')), 4).msg).toBe('CNI_COMMAND is not set');
    expect(expectError(await cni('UPDATE', conf('1.1.0')), 4).msg).toMatch(/CNI_COMMAND: unknown/);
  });

  it('4: ADD and CHECK need CNI_CONTAINERID, CNI_NETNS and CNI_IFNAME, named in the message', async () => {
    for (const command of ['ADD', 'CHECK']) {
      const e = expectError(await cni(command, conf('1.1.0'), {}), 4);
      expect(e.msg).toMatch(/CNI_CONTAINERID: required/);
      expect(e.msg).toMatch(/CNI_NETNS: required/);
      expect(e.msg).toMatch(/CNI_IFNAME: required/);
    }
    const del = expectError(await cni('DEL', conf('1.1.0'), { CNI_IFNAME: 'eth0' }), 4);
    expect(del.msg).toMatch(/CNI_CONTAINERID: required for DEL/);
  });

  it('4: invalid CNI_IFNAME, CNI_CONTAINERID, CNI_NETNS and CNI_ARGS', async () => {
    const cases: [Record<string, string>, RegExp][] = [
      [{ CNI_IFNAME: 'eth0:1' }, /CNI_IFNAME: interface name must be/],
      [{ CNI_IFNAME: 'a-very-long-name0' }, /CNI_IFNAME/],
      [{ CNI_CONTAINERID: '-x;reboot' }, /CNI_CONTAINERID: container ID must be/],
      [{ CNI_NETNS: '/proc/../etc' }, /CNI_NETNS: netns path must not contain/],
      [{ CNI_ARGS: 'K8S_POD_NAME' }, /CNI_ARGS: must be KEY=VALUE pairs/],
      [
        { CNI_ARGS: `K8S_POD_NAME=${'x'.repeat(2000)}` },
        /CNI_ARGS\.K8S_POD_NAME: must be at most 1024/,
      ],
    ];
    for (const [env, msg] of cases)
      expect(
        expectError(await cni('ADD', conf('1.1.0'), { ...attachment, ...env }), 4).msg,
      ).toMatch(msg);
    expect(seen).toEqual([]);
  });

  it('6: stdin that is not a JSON object', async () => {
    for (const stdin of ['', '{"cniVersion": "1.1.0",', '[1,2]'])
      expect(expectError(await cni('ADD', stdin), 6).cniVersion).toBe('1.1.0');
  });

  it('7: a configuration that fails FlockNetConf, naming the field', async () => {
    const e = expectError(await cni('ADD', conf('1.0.0', { type: 'bridge' })), 7);
    expect(e).toMatchObject({ cniVersion: '1.0.0' });
    expect(e.msg).toBe('invalid network configuration: type: expected "flock"');
    const t = expectError(await cni('ADD', conf('1.1.0', { timeoutMs: 'soon' })), 7);
    expect(t.msg).toMatch(/timeoutMs: expected number/);
    const g = expectError(
      await cni('GC', conf('1.1.0', { 'cni.dev/valid-attachments': [{ containerID: 'a' }] }), {}),
      7,
    );
    expect(g.msg).toMatch(/\["cni.dev\/valid-attachments"\]\[0\]\.ifname: expected string/);
    expect(seen).toEqual([]);
  });

  it('1: an unsupported cniVersion, and STATUS/GC from callers older than 1.1.0', async () => {
    const old = expectError(await cni('ADD', conf('0.3.1')), 1);
    expect(old).toMatchObject({ cniVersion: '1.1.0', msg: 'unsupported cniVersion "0.3.1"' });
    for (const version of ['0.4.0', '1.0.0'])
      for (const command of ['STATUS', 'GC']) {
        const e = expectError(await cni(command, conf(version), {}), 1);
        expect(e).toMatchObject({
          cniVersion: version,
          msg: `config version ${version} does not allow ${command}`,
        });
      }
    expect(seen).toEqual([]);
  });
});

describe('flock CNI plugin: errors reaching the agent', () => {
  const unreachable = (path: string) =>
    `flock agent not reachable at ${path}: is the flock agent running on this node?`;

  it('no socket: 11 for ADD/CHECK/DEL/GC, 50 for STATUS, with a clear message', async () => {
    for (const command of ['ADD', 'CHECK', 'DEL']) {
      const e = expectError(await cni(command, conf('1.1.0')), 11);
      expect(e.msg).toBe(unreachable(tmp.socketPath));
      expect(e.details).toMatch(/ENOENT/);
    }
    expectError(await cni('GC', conf('1.1.0'), {}), 11);
    const status = expectError(await cni('STATUS', conf('1.1.0'), {}), 50);
    expect(status.msg).toBe(unreachable(tmp.socketPath));
  });

  it('a socket nobody listens on (agent died): 11, and 50 for STATUS', async () => {
    await serve(async () => ({ ok: true }));
    // Leave a socket file without a listener, as a crashed agent does.
    const { spawn } = await import('node:child_process');
    await server?.close();
    server = undefined;
    await mkdir(join(tmp.dir, 'run'), { recursive: true });
    const child = spawn(process.execPath, [
      '-e',
      `require('net').createServer().listen(${JSON.stringify(tmp.socketPath)}, () => process.kill(process.pid, 'SIGKILL'))`,
    ]);
    await new Promise((resolve) => child.on('exit', resolve));
    const e = expectError(await cni('ADD', conf('1.1.0')), 11);
    expect(e.details).toMatch(/ECONNREFUSED/);
    expectError(await cni('STATUS', conf('1.1.0'), {}), 50);
  });

  it('an agent that does not answer in time: 11 (STATUS: 50)', async () => {
    await serve(() => new Promise<never>(() => {}));
    const e = expectError(await cni('ADD', conf('1.1.0', { timeoutMs: 300 })), 11);
    expect(e.msg).toBe(`flock agent at ${tmp.socketPath} did not answer within 300 ms`);
    expectError(await cni('STATUS', conf('1.1.0', { timeoutMs: 300 }), {}), 50);
    expect(seen.map((s) => s.command)).toEqual(['ADD', 'STATUS']);
  });

  it("the agent's own errors reach the runtime with their code, in the caller version", async () => {
    server = await startCniServer({
      socketPath: tmp.socketPath,
      handle: async () => ({
        ok: false,
        error: { code: 102, msg: 'node address space exhausted', details: '2001:db8::/64' },
      }),
    });
    expect(expectError(await cni('ADD', conf('0.4.0')), 102)).toEqual({
      cniVersion: '0.4.0',
      code: 102,
      msg: 'node address space exhausted',
      details: '2001:db8::/64',
    });
  });
});
