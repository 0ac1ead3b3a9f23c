// runPlugin in-process with a scripted agent call; the real client against the real server is
// tested from the agent's side (packages/agent/src/cni-server/plugin-*.test.ts).
import { describe, expect, it } from 'vitest';
import type { AgentRequest, AgentResponse } from '@flock/api';
import type { CallAgent, CallOptions } from './agent-client.js';
import { CniFailure } from './failure.js';
import { runPlugin } from './plugin.js';

const env = { CNI_CONTAINERID: 'abc', CNI_NETNS: '/run/netns/a', CNI_IFNAME: 'eth0' };
const conf = (extra: object = {}) =>
  JSON.stringify({ cniVersion: '1.1.0', name: 'flock', type: 'flock', ...extra });

function agent(answer: (req: AgentRequest) => AgentResponse | Promise<AgentResponse>) {
  const calls: [AgentRequest, CallOptions][] = [];
  const call: CallAgent = async (req, options) => {
    calls.push([req, options]);
    return answer(req);
  };
  return { call, calls };
}

describe('runPlugin', () => {
  it('uses the default socket and timeout unless the configuration names others', async () => {
    const a = agent(() => ({ ok: true }));
    await runPlugin({ env: { CNI_COMMAND: 'STATUS' }, stdin: conf() }, a.call);
    await runPlugin(
      { env: { CNI_COMMAND: 'STATUS' }, stdin: conf({ socketPath: '/x/s.sock', timeoutMs: 500 }) },
      a.call,
    );
    expect(a.calls.map(([, o]) => o)).toEqual([
      { socketPath: '/run/flock/cni.sock', timeoutMs: 60_000 },
      { socketPath: '/x/s.sock', timeoutMs: 500 },
    ]);
  });

  it('forwards only what each command needs', async () => {
    const a = agent(() => ({ ok: true }));
    const full = { ...env, CNI_ARGS: 'A=1' };
    await runPlugin({ env: { CNI_COMMAND: 'GC', ...full }, stdin: conf() }, a.call);
    await runPlugin({ env: { CNI_COMMAND: 'DEL', ...full }, stdin: conf() }, a.call);
    expect(a.calls.map(([r]) => [r.command, r.containerID, r.netns, r.ifName, r.args])).toEqual([
      ['GC', undefined, undefined, undefined, {}],
      ['DEL', 'abc', '/run/netns/a', 'eth0', { A: '1' }],
    ]);
  });

  it('reports an ADD reply without a result as an I/O failure (5)', async () => {
    const out = await runPlugin(
      { env: { CNI_COMMAND: 'ADD', ...env }, stdin: conf() },
      agent(() => ({ ok: true })).call,
    );
    expect(out.exitCode).toBe(1);
    expect(JSON.parse(out.stdout)).toMatchObject({
      code: 5,
      msg: expect.stringMatching(/without a result/),
    });
  });

  it('passes CniFailures through and turns anything else into 999', async () => {
    const failing =
      (e: Error): CallAgent =>
      async () =>
        Promise.reject(e);
    const f = await runPlugin(
      { env: { CNI_COMMAND: 'ADD', ...env }, stdin: conf() },
      failing(new CniFailure(11, 'busy', 'EAGAIN')),
    );
    expect(JSON.parse(f.stdout)).toEqual({
      cniVersion: '1.1.0',
      code: 11,
      msg: 'busy',
      details: 'EAGAIN',
    });
    const boom = await runPlugin(
      { env: { CNI_COMMAND: 'ADD', ...env }, stdin: conf() },
      failing(new TypeError('x is undefined')),
    );
    expect(JSON.parse(boom.stdout)).toEqual({
      cniVersion: '1.1.0',
      code: 999,
      msg: 'flock CNI plugin failed',
      details: 'x is undefined',
    });
  });

  it('reports an unreadable stdin as 5, and an odd VERSION request with our version', async () => {
    const a = agent(() => ({ ok: true }));
    const io = await runPlugin(
      { env: { CNI_COMMAND: 'DEL', ...env }, stdin: new Error('EIO: i/o error, read') },
      a.call,
    );
    expect(JSON.parse(io.stdout)).toMatchObject({ code: 5, details: 'EIO: i/o error, read' });
    const v = await runPlugin(
      { env: { CNI_COMMAND: 'VERSION' }, stdin: JSON.stringify({ cniVersion: '"><script>' }) },
      a.call,
    );
    expect(JSON.parse(v.stdout)).toEqual({
      cniVersion: '1.1.0',
      supportedVersions: ['0.4.0', '1.0.0', '1.1.0'],
    });
    expect(a.calls).toEqual([]);
  });
});
