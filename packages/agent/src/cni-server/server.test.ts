import { spawn } from 'node:child_process';
import { chmod, lstat, mkdir, stat, symlink, writeFile, readFile } from 'node:fs/promises';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import type { AgentRequest, AgentResponse } from '@flock/api';
import { startCniServer, type CniHandler, type CniServer } from './server.js';
import { rawExchange, recordingLogger, tempSocketPath } from '../../testing/cni-server.js';

const config = { cniVersion: '1.1.0', name: 'flock', type: 'flock' };
const addRequest = {
  command: 'ADD',
  containerID: 'abc123',
  netns: '/run/netns/cni-1',
  ifName: 'eth0',
  args: { K8S_POD_NAMESPACE: 'default', K8S_POD_NAME: 'web-0' },
  config,
};
const okResult: AgentResponse = {
  ok: true,
  result: { cniVersion: '1.1.0', ips: [{ address: '2001:db8::5/128' }] },
};

let tmp: Awaited<ReturnType<typeof tempSocketPath>>;
let server: CniServer | undefined;
const seen: AgentRequest[] = [];
const recorder: CniHandler = async (req) => {
  seen.push(req);
  return okResult;
};

async function start(handle: CniHandler = recorder, extra: object = {}) {
  server = await startCniServer({ socketPath: tmp.socketPath, handle, ...extra });
  return server;
}

async function ask(payload: unknown): Promise<AgentResponse> {
  const text = typeof payload === 'string' ? payload : JSON.stringify(payload);
  return JSON.parse(await rawExchange(tmp.socketPath, text)) as AgentResponse;
}

beforeEach(async () => {
  tmp = await tempSocketPath();
  seen.length = 0;
});
afterEach(async () => {
  await server?.close();
  server = undefined;
  await tmp.cleanup();
});

describe('CNI socket server: files and permissions', () => {
  it('creates the directory 0700 and the socket 0600, and answers a valid request', async () => {
    await start();
    const dir = await stat(join(tmp.dir, 'run'));
    expect(dir.mode & 0o777).toBe(0o700);
    const sock = await lstat(tmp.socketPath);
    expect(sock.isSocket()).toBe(true);
    expect(sock.mode & 0o777).toBe(0o600);
    expect(await ask(addRequest)).toEqual(okResult);
    expect(seen).toEqual([addRequest]);
  });

  it('keeps an existing safe directory as it is', async () => {
    await mkdir(join(tmp.dir, 'run'), { mode: 0o750 });
    await chmod(join(tmp.dir, 'run'), 0o750);
    await start();
    expect((await stat(join(tmp.dir, 'run'))).mode & 0o777).toBe(0o750);
  });

  it('refuses a directory writable by group or others', async () => {
    await mkdir(join(tmp.dir, 'run'));
    await chmod(join(tmp.dir, 'run'), 0o777);
    const logger = recordingLogger();
    await expect(start(recorder, { logger })).rejects.toThrow(/writable by group or others/);
    expect(logger.records.some((r) => r.level === 'error')).toBe(true);
  });

  it('refuses a directory that is a symlink', async () => {
    await mkdir(join(tmp.dir, 'elsewhere'), { mode: 0o700 });
    await symlink(join(tmp.dir, 'elsewhere'), join(tmp.dir, 'run'));
    await expect(start()).rejects.toThrow(/not a directory/);
  });

  it('refuses a non-socket file at the socket path and leaves it alone', async () => {
    await mkdir(join(tmp.dir, 'run'), { mode: 0o700 });
    await writeFile(tmp.socketPath, 'precious');
    await expect(start()).rejects.toThrow(/not a socket/);
    expect(await readFile(tmp.socketPath, 'utf8')).toBe('precious');
  });

  it('replaces a stale socket left by a killed agent', async () => {
    await mkdir(join(tmp.dir, 'run'), { mode: 0o700 });
    // A process that listens and is SIGKILLed leaves its socket file behind.
    const child = spawn(process.execPath, [
      '-e',
      `require('net').createServer().listen(${JSON.stringify(tmp.socketPath)}, () => process.kill(process.pid, 'SIGKILL'))`,
    ]);
    await new Promise((resolve) => child.on('exit', resolve));
    expect((await lstat(tmp.socketPath)).isSocket()).toBe(true);
    const logger = recordingLogger();
    await start(recorder, { logger });
    expect(await ask(addRequest)).toEqual(okResult);
    expect(logger.records.map((r) => r.message)).toContain('removed stale CNI socket');
  });

  it('refuses to take over a socket another process is serving', async () => {
    await mkdir(join(tmp.dir, 'run'), { mode: 0o700 });
    const other = createServer(() => {});
    await new Promise<void>((resolve) => other.listen(tmp.socketPath, resolve));
    try {
      await expect(start()).rejects.toThrow(/another process is serving/);
    } finally {
      await new Promise((resolve) => other.close(resolve));
    }
  });

  it('close() lets a request in progress finish, and cuts a hung one after the grace', async () => {
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    const handling = new Set<string>();
    const s = await start(
      async (req) => {
        handling.add(req.containerID ?? '');
        if (req.containerID === 'hung') return new Promise<never>(() => {});
        await gate;
        return okResult;
      },
      { closeGraceMs: 300 },
    );
    const finishing = ask(addRequest);
    const hung = rawExchange(
      tmp.socketPath,
      JSON.stringify({ ...addRequest, containerID: 'hung' }),
    );
    await vi.waitFor(() => expect(handling.size).toBe(2)); // both are with the handler now
    const closing = s.close();
    server = undefined;
    release();
    expect(await finishing).toEqual(okResult);
    expect(await hung).toBe(''); // cut without a reply: the plugin reports 11 and is retried
    await closing;
  });

  it('close() stops accepting and removes the socket', async () => {
    const s = await start();
    await s.close();
    server = undefined;
    await expect(lstat(tmp.socketPath)).rejects.toThrow(/ENOENT/);
    await expect(rawExchange(tmp.socketPath, '{}')).rejects.toThrow(/ENOENT|no reply/);
  });
});

describe('CNI socket server: requests', () => {
  it('answers undecodable JSON with code 6', async () => {
    await start();
    const r = await ask('{"command": "ADD",');
    expect(r).toMatchObject({ ok: false, error: { code: 6, msg: 'request is not valid JSON' } });
    expect(seen).toEqual([]);
  });

  it('answers a request of the wrong shape with code 6 naming the field', async () => {
    await start();
    const r = await ask({ command: 'VERSION', config });
    expect(r).toMatchObject({ ok: false, error: { code: 6 } });
    expect(r.ok === false && r.error.msg).toMatch(/command/);
  });

  it('answers an invalid configuration with code 7 naming the field', async () => {
    await start();
    const r = await ask({ ...addRequest, config: { ...config, type: 'bridge', timeoutMs: 5 } });
    expect(r).toMatchObject({ ok: false, error: { code: 7 } });
    expect(r.ok === false && r.error.msg).toMatch(/config\.type: expected "flock"/);
    expect(r.ok === false && r.error.msg).toMatch(/config\.timeoutMs: must be at least 100/);
  });

  it('answers invalid environment-derived fields with code 4 naming them', async () => {
    await start();
    const bad = await ask({ ...addRequest, containerID: '../etc', ifName: 'eth0;reboot' });
    expect(bad).toMatchObject({ ok: false, error: { code: 4 } });
    expect(bad.ok === false && bad.error.msg).toMatch(/containerID: container ID must be/);
    expect(bad.ok === false && bad.error.msg).toMatch(/ifName: interface name must be/);
    const missing = await ask({ ...addRequest, netns: undefined });
    expect(missing.ok === false && missing.error.msg).toMatch(/netns: required for ADD/);
    expect(seen).toEqual([]);
  });

  it('lets DEL through without a netns, and STATUS/GC without any container', async () => {
    await start();
    expect(await ask({ ...addRequest, command: 'DEL', netns: undefined })).toEqual(okResult);
    expect(await ask({ command: 'STATUS', config })).toEqual(okResult);
    expect(seen.map((r) => [r.command, r.netns, r.args])).toEqual([
      ['DEL', undefined, addRequest.args],
      ['STATUS', undefined, {}],
    ]);
  });

  it('refuses an oversized request with code 5 without calling the handler', async () => {
    await start(recorder, { maxRequestBytes: 1024 });
    const huge = JSON.stringify({ ...addRequest, config: { ...config, pad: 'x'.repeat(4096) } });
    const r = JSON.parse(await rawExchange(tmp.socketPath, huge)) as AgentResponse;
    expect(r).toMatchObject({ ok: false, error: { code: 5, msg: 'request exceeds 1024 bytes' } });
    expect(seen).toEqual([]);
  });

  it('answers a client that never finishes its request with code 5 after the timeout', async () => {
    await start(recorder, { requestTimeoutMs: 200 });
    const reply = await rawExchange(tmp.socketPath, '{"command":', { keepOpen: true });
    expect(JSON.parse(reply)).toMatchObject({
      ok: false,
      error: { code: 5, msg: 'request not received within 200 ms' },
    });
    expect(seen).toEqual([]);
  });

  it('survives clients that vanish, before or while the handler works', async () => {
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    await start(async (req) => {
      seen.push(req);
      await gate;
      return okResult;
    });
    // One that disconnects mid-request, one that leaves while its request is handled.
    await rawExchange(tmp.socketPath, '{"comm', { keepOpen: true, timeoutMs: 100 }).catch(() => {});
    const leaving = rawExchange(tmp.socketPath, JSON.stringify(addRequest), { timeoutMs: 100 });
    await expect(leaving).rejects.toThrow(/no reply/);
    release();
    expect(await ask({ ...addRequest, containerID: 'next' })).toEqual(okResult);
    expect(seen.map((r) => r.containerID)).toEqual(['abc123', 'next']);
  });

  it('turns a throwing handler or an invalid response into code 999', async () => {
    await start(async (req) => {
      if (req.command === 'ADD') throw new Error('veth setup exploded');
      return { ok: 'yes' } as unknown as AgentResponse;
    });
    expect(await ask(addRequest)).toEqual({
      ok: false,
      error: { code: 999, msg: 'flock agent failed: veth setup exploded' },
    });
    expect(await ask({ command: 'STATUS', config })).toMatchObject({
      ok: false,
      error: { code: 999, msg: 'flock agent produced an invalid response' },
    });
  });

  it('serves concurrent connections at the same time', async () => {
    let inFlight = 0;
    let peak = 0;
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    await start(async () => {
      inFlight++;
      peak = Math.max(peak, inFlight);
      if (peak === 20) release();
      await gate;
      inFlight--;
      return okResult;
    });
    const replies = await Promise.all(
      Array.from({ length: 20 }, (_, i) => ask({ ...addRequest, containerID: `c${i}` })),
    );
    expect(peak).toBe(20);
    expect(replies).toEqual(Array(20).fill(okResult));
  });
});
