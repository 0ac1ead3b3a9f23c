// The socket is root-only: a plugin that is not root is refused by the kernel and says so, and
// the agent refuses a socket directory someone else owns. Needs root (setpriv, chown).
import { chmod, chown, mkdir, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { requireRoot, requireTools } from '@flock/testkit';
import type { AgentRequest } from '@flock/api';
import { installPlugin, invokePlugin, type PluginInstall } from '../../testing/plugin-process.js';
import { startCniServer, type CniServer } from './server.js';
import { tempSocketPath } from '../../testing/cni-server.js';

const NOBODY = 65534;
let plugin: PluginInstall;
let tmp: Awaited<ReturnType<typeof tempSocketPath>>;
let server: CniServer | undefined;
const seen: AgentRequest[] = [];

beforeAll(async () => {
  requireRoot();
  requireTools('setpriv');
  plugin = await installPlugin(undefined, { copyNode: true });
  await chmod(plugin.dir, 0o755); // nobody must be able to run the plugin itself
});
afterAll(async () => {
  if (plugin) await rm(plugin.dir, { recursive: true, force: true });
});
beforeEach(async () => {
  tmp = await tempSocketPath();
  await chmod(tmp.dir, 0o755); // only the agent's own directory and socket keep nobody out
  seen.length = 0;
});
afterEach(async () => {
  await server?.close();
  server = undefined;
  await tmp.cleanup();
});

const start = async () => {
  server = await startCniServer({
    socketPath: tmp.socketPath,
    handle: async (req) => {
      seen.push(req);
      return { ok: true, result: { cniVersion: '1.1.0', ips: [{ address: '2001:db8::5/128' }] } };
    },
  });
};
const conf = () =>
  JSON.stringify({ cniVersion: '1.1.0', name: 'flock', type: 'flock', socketPath: tmp.socketPath });
const attachment = { CNI_CONTAINERID: 'c0ffee42', CNI_NETNS: '/run/netns/x', CNI_IFNAME: 'eth0' };

describe('CNI socket: root only', () => {
  for (const [name, prepare] of [
    ['the socket directory (0700)', async () => {}],
    [
      'the socket itself (0600) in a directory others may enter',
      async () => {
        await mkdir(join(tmp.dir, 'run'), { mode: 0o755 });
        await chmod(join(tmp.dir, 'run'), 0o755);
      },
    ],
  ] as const) {
    it(`a plugin running as nobody is refused by ${name}, with a clear error`, async () => {
      await prepare();
      await start();
      const asRoot = await invokePlugin(plugin, { CNI_COMMAND: 'ADD', ...attachment }, conf());
      expect(asRoot.code).toBe(0);

      const add = await invokePlugin(plugin, { CNI_COMMAND: 'ADD', ...attachment }, conf(), {
        as: 'nobody',
      });
      expect(add.code).toBe(1);
      expect(add.output).toMatchObject({
        cniVersion: '1.1.0',
        code: 5,
        msg: `permission denied connecting to the flock agent at ${tmp.socketPath}: the flock CNI plugin must run as root`,
      });
      expect(add.output?.['details']).toMatch(/EACCES/);
      const status = await invokePlugin(plugin, { CNI_COMMAND: 'STATUS' }, conf(), {
        as: 'nobody',
      });
      expect(status.output).toMatchObject({
        code: 50,
        msg: expect.stringMatching(/permission denied/),
      });
      expect(seen.map((r) => r.command)).toEqual(['ADD']); // only root's request got through
    });
  }

  it('the agent refuses a socket directory owned by another user', async () => {
    await mkdir(join(tmp.dir, 'run'), { mode: 0o700 });
    await chown(join(tmp.dir, 'run'), NOBODY, NOBODY);
    await expect(start()).rejects.toThrow(/owned by uid 65534, not by the agent's uid 0/);
  });
});
