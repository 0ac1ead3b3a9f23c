// BirdClient against a fake BIRD: a unix socket server that answers like BIRD 2.0.12 (replies
// recorded from the real one). The real twin is client.kernel.test.ts against a real BIRD.
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { BirdClient, BirdUnavailableError } from './client.js';
import { BirdCommandError, BirdError, BirdProtocolError } from './reply.js';

const recorded = (name: string) =>
  readFileSync(join(import.meta.dirname, '__fixtures__', 'replies', `${name}.txt`), 'utf8');

/** Answers commands from a table; records what it was asked. Writes replies in small pieces. */
class FakeBird {
  readonly commands: string[] = [];
  private server: Server | undefined;

  constructor(
    readonly path: string,
    private readonly answers: Record<string, string | ((socket: Socket) => void)>,
  ) {}

  start(): Promise<void> {
    this.server = createServer((socket) => {
      socket.write(recorded('welcome'));
      let buffer = '';
      socket.on('data', (chunk) => {
        buffer += chunk.toString();
        let nl: number;
        while ((nl = buffer.indexOf('\n')) >= 0) {
          const command = buffer.slice(0, nl);
          buffer = buffer.slice(nl + 1);
          this.commands.push(command);
          const answer = this.answers[command] ?? recorded('command-syntax-error');
          if (typeof answer === 'function') answer(socket);
          else for (let i = 0; i < answer.length; i += 7) socket.write(answer.slice(i, i + 7));
        }
      });
    });
    return new Promise((resolve) => this.server?.listen(this.path, resolve));
  }

  stop(): Promise<void> {
    return new Promise((resolve) => (this.server ? this.server.close(() => resolve()) : resolve()));
  }
}

let dir: string;
let fakes: FakeBird[];
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'flock-bird-client-'));
  fakes = [];
});
afterEach(async () => {
  for (const f of fakes) await f.stop();
  rmSync(dir, { recursive: true, force: true });
});

async function fake(
  answers: ConstructorParameters<typeof FakeBird>[1],
  start = true,
): Promise<FakeBird> {
  const f = new FakeBird(join(dir, 'bird.ctl'), answers);
  fakes.push(f);
  if (start) await f.start();
  return f;
}

describe('BirdClient commands', () => {
  it('reads the welcome, sends one command, returns its reply', async () => {
    const bird = await fake({ 'show protocols': recorded('show-protocols-node') });
    const client = new BirdClient({ socketPath: bird.path });
    const rows = await client.showProtocols();
    expect(rows.map((r) => r.name)).toContain('peer_2001_db8_ffff__1');
    expect(bird.commands).toEqual(['show protocols']);
  });

  it('configure with check runs "configure check" then "configure" on one connection', async () => {
    const bird = await fake({
      'configure check': recorded('configure-check-ok'),
      configure: recorded('configure-ok'),
    });
    const client = new BirdClient({ socketPath: bird.path });
    await expect(client.configure({ check: true })).resolves.toEqual({
      code: 3,
      message: 'Reconfigured',
    });
    expect(bird.commands).toEqual(['configure check', 'configure']);
  });

  it('accepts "reconfiguration in progress" and passes a file name in quotes', async () => {
    const bird = await fake({ 'configure "/etc/bird/x.conf"': recorded('configure-in-progress') });
    const client = new BirdClient({ socketPath: bird.path });
    await expect(client.configure({ file: '/etc/bird/x.conf' })).resolves.toMatchObject({
      code: 4,
    });
    await expect(client.configure({ file: 'a"b' })).rejects.toThrow(
      /unusable configuration file name/,
    );
  });

  it('returns a refused config at once, with BIRD message and line', async () => {
    const bird = await fake({ 'configure check': recorded('configure-syntax-error') });
    const client = new BirdClient({ socketPath: bird.path });
    const error = await client.configure({ check: true }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(BirdCommandError);
    expect((error as BirdCommandError).code).toBe(8002);
    expect((error as BirdCommandError).location).toEqual({ file: 'node.conf', line: 4, column: 1 });
    expect(bird.commands).toEqual(['configure check']); // no "configure" after a failed check
  });

  it('treats an unexpected configure code as refused', async () => {
    const bird = await fake({ configure: '0006 Reconfiguration ignored, shutting down\n' });
    await expect(new BirdClient({ socketPath: bird.path }).configure()).rejects.toThrow(
      BirdCommandError,
    );
  });

  it('asks for one protocol by quoted name; an unknown one is an empty list', async () => {
    const bird = await fake({
      'show protocols all "node6"': recorded('show-protocols-all-active'),
      'show protocols all "peer_x"': recorded('show-protocols-nomatch'),
    });
    const client = new BirdClient({ socketPath: bird.path });
    expect((await client.showProtocolsAll('node6')).map((p) => p.bgpState)).toEqual(['Active']);
    expect(await client.showProtocolsAll('peer_x')).toEqual([]);
    await expect(client.showProtocolsAll('x" ; down')).rejects.toThrow(/not a BIRD protocol name/);
    await expect(client.command('show status\ndown')).rejects.toThrow(/one line/);
  });

  it('fails on a reply cut off by a closed socket, and on a silent BIRD after the timeout', async () => {
    const bird = await fake({
      cut: (s) => s.end('1002-half a reply\n'),
      silent: () => undefined,
    });
    const client = new BirdClient({ socketPath: bird.path, timeoutMs: 200 });
    await expect(client.command('cut')).rejects.toThrow(BirdProtocolError);
    await expect(client.command('silent')).rejects.toThrow(
      /no complete reply from BIRD within 200 ms/,
    );
  });
});

describe('BirdClient retries', () => {
  it('retries while the socket is absent, then talks to BIRD once it is up', async () => {
    const bird = await fake({ 'show status': recorded('show-status') }, false);
    const sleeps: number[] = [];
    const sleep = async (ms: number) => {
      sleeps.push(ms);
      if (sleeps.length === 3) await bird.start();
    };
    const reply = await new BirdClient({ socketPath: bird.path, sleep }).command('show status');
    expect(reply.code).toBe(13);
    expect(sleeps).toEqual([500, 500, 500]);
  });

  it('retries ECONNREFUSED (a socket path nobody listens on) and gives up after the attempts', async () => {
    const path = join(dir, 'stale.ctl');
    writeFileSync(path, ''); // connect() to a file that is not a listening socket: ECONNREFUSED
    const sleeps: number[] = [];
    const client = new BirdClient({
      socketPath: path,
      attempts: 4,
      retryDelayMs: 7,
      sleep: async (ms) => void sleeps.push(ms),
    });
    const error = await client.command('show status').catch((e: unknown) => e);
    expect(error).toBeInstanceOf(BirdUnavailableError);
    expect((error as BirdUnavailableError).lastError.code).toBe('ECONNREFUSED');
    expect((error as BirdUnavailableError).attempts).toBe(4);
    expect(sleeps).toEqual([7, 7, 7]);
  });

  it('defaults to 20 attempts 500 ms apart', async () => {
    const sleeps: number[] = [];
    const client = new BirdClient({
      socketPath: join(dir, 'absent.ctl'),
      sleep: async (ms) => void sleeps.push(ms),
    });
    await expect(client.showProtocols()).rejects.toThrow(/unavailable after 20 attempts: ENOENT/);
    expect(sleeps).toEqual(new Array(19).fill(500));
  });

  it('does not retry other connection errors', async () => {
    writeFileSync(join(dir, 'file'), '');
    const sleeps: number[] = [];
    const client = new BirdClient({
      socketPath: join(dir, 'file', 'bird.ctl'),
      sleep: async (ms) => void sleeps.push(ms),
    });
    const error = await client.showProtocols().catch((e: unknown) => e);
    expect(error).toBeInstanceOf(BirdError);
    expect(error).not.toBeInstanceOf(BirdUnavailableError);
    expect((error as Error).message).toMatch(/ENOTDIR/);
    expect(sleeps).toEqual([]);
  });

  it('does not retry a refused command', async () => {
    const bird = await fake({});
    const sleeps: number[] = [];
    const client = new BirdClient({
      socketPath: bird.path,
      sleep: async (ms) => void sleeps.push(ms),
    });
    await expect(client.command('bogus')).rejects.toMatchObject({ code: 9001 });
    expect(sleeps).toEqual([]);
    expect(bird.commands).toEqual(['bogus']);
  });
});
