// The socket client against peers the real agent never is: silent, rude, or talking nonsense.
// (Against the real server it is tested from packages/agent/src/cni-server.)
import { mkdtemp, rm } from 'node:fs/promises';
import { createServer, type Server, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { AgentRequest } from '@flock/api';
import { callAgent } from './agent-client.js';
import { CniFailure } from './failure.js';

const config = { cniVersion: '1.1.0', name: 'flock', type: 'flock' as const };
const add: AgentRequest = {
  command: 'ADD',
  containerID: 'abc',
  netns: '/run/netns/a',
  ifName: 'eth0',
  args: {},
  config,
};
const status: AgentRequest = { command: 'STATUS', args: {}, config };

let dir: string;
let socketPath: string;
let peer: Server | undefined;

beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'flock-client-'));
  socketPath = join(dir, 'agent.sock');
});
afterEach(async () => {
  peer?.close();
  peer = undefined;
  await rm(dir, { recursive: true, force: true });
});

/** A peer that reads the request and then does `act`. */
async function listen(act: (socket: Socket, request: string) => void): Promise<string[]> {
  const requests: string[] = [];
  peer = createServer({ allowHalfOpen: true }, (socket) => {
    let data = '';
    socket.on('data', (c: Buffer) => (data += c.toString()));
    socket.on('end', () => {
      requests.push(data);
      act(socket, data);
    });
  });
  await new Promise<void>((resolve) => peer?.listen(socketPath, resolve));
  return requests;
}

async function failureOf(request: AgentRequest, timeoutMs = 2000): Promise<CniFailure> {
  const e = await callAgent(request, { socketPath, timeoutMs, maxReplyBytes: 1024 }).then(
    () => undefined,
    (err: unknown) => err,
  );
  expect(e).toBeInstanceOf(CniFailure);
  return e as CniFailure;
}

describe('callAgent', () => {
  it('sends one JSON request, half-closes, and returns the validated reply', async () => {
    const requests = await listen((s) => s.end('{"ok":true,"result":{"cniVersion":"1.1.0"}}'));
    expect(await callAgent(add, { socketPath, timeoutMs: 2000 })).toEqual({
      ok: true,
      result: { cniVersion: '1.1.0' },
    });
    expect(requests.map((r) => JSON.parse(r) as unknown)).toEqual([add]);
  });

  it('reports an undecodable or invalid reply as 5, and 50 for STATUS', async () => {
    await listen((s, req) => s.end(req.includes('STATUS') ? '{"ok":"maybe"}' : 'not json'));
    expect(await failureOf(add)).toMatchObject({
      code: 5,
      msg: expect.stringMatching(/undecodable reply/),
    });
    expect(await failureOf(status)).toMatchObject({
      code: 50,
      msg: expect.stringMatching(/invalid reply/),
    });
  });

  it('refuses a reply larger than the limit (5)', async () => {
    await listen((s) => s.end(`{"ok":true,"pad":"${'x'.repeat(4096)}"}`));
    expect(await failureOf(add)).toMatchObject({
      code: 5,
      msg: expect.stringMatching(/exceeds 1024 bytes/),
    });
  });

  it('reports a peer that closes without a reply as 11 (try again)', async () => {
    await listen((s) => s.end());
    expect(await failureOf(add)).toMatchObject({
      code: 11,
      msg: expect.stringMatching(/without a reply/),
    });
  });

  it('gives up after the timeout with 11, and 50 for STATUS', async () => {
    await listen(() => {});
    expect(await failureOf(add, 200)).toMatchObject({
      code: 11,
      msg: `flock agent at ${socketPath} did not answer within 200 ms`,
    });
    expect(await failureOf(status, 200)).toMatchObject({ code: 50 });
  });

  it('names the socket and the likely cause when nothing listens (11)', async () => {
    expect(await failureOf(add)).toMatchObject({
      code: 11,
      msg: `flock agent not reachable at ${socketPath}: is the flock agent running on this node?`,
      details: expect.stringMatching(/^ENOENT/),
    });
  });
});
