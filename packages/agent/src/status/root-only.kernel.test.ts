// Security: the agent's socket and state files are root-only. The real socket server and the
// real allocation store create their files under a directory everyone may enter; the modes
// are checked, and a client running as uid/gid nobody (setpriv) is refused by the kernel
// (EACCES) both on connect and on reading the store, while root is served. Needs root.
import { spawn } from 'node:child_process';
import { chmod, mkdir, mkdtemp, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { requireRoot, requireTools } from '@flock/testkit';
import { silentLogger, type AgentRequest } from '@flock/api';
import { AllocationStore } from '../store/index.js';
import { startCniServer, type CniServer } from '../cni-server/index.js';
import { rawExchange } from '../../testing/cni-server.js';
import { fetchStatus } from './command.js';
import { startStatusServer } from './server.js';
import type { AgentStatus } from './snapshot.js';

const NOBODY = '65534';

/** What a process running as nobody gets when it connects to the socket and reads the paths. */
function probeAsNobody(
  socketPath: string,
  files: string[],
): Promise<{ connect: string; reads: string[] }> {
  const script = `
    const net = require('node:net'), fs = require('node:fs');
    const reads = ${JSON.stringify(files)}.map((f) => {
      try { fs.readFileSync(f); return 'read'; } catch (e) { return e.code; }
    });
    const s = net.createConnection(${JSON.stringify(socketPath)});
    const done = (connect) => { console.log(JSON.stringify({ connect, reads })); s.destroy(); };
    s.on('connect', () => done('connected'));
    s.on('error', (e) => done(e.code));`;
  return new Promise((resolve, reject) => {
    const child = spawn(
      'setpriv',
      [`--reuid=${NOBODY}`, `--regid=${NOBODY}`, '--clear-groups', process.execPath, '-e', script],
      { stdio: ['ignore', 'pipe', 'pipe'] },
    );
    let out = '';
    let err = '';
    child.stdout.on('data', (c: Buffer) => (out += c.toString()));
    child.stderr.on('data', (c: Buffer) => (err += c.toString()));
    child.on('error', reject);
    child.on('close', (code) =>
      code === 0
        ? resolve(JSON.parse(out) as { connect: string; reads: string[] })
        : reject(new Error(`probe as nobody exited ${code}: ${err}`)),
    );
  });
}

const mode = async (path: string) => (await stat(path)).mode & 0o777;
const request = {
  command: 'STATUS',
  config: { cniVersion: '1.1.0', name: 'flock', type: 'flock' },
};

let root: string;
let server: CniServer | undefined;
const seen: AgentRequest[] = [];

beforeAll(() => {
  requireRoot();
  requireTools('setpriv');
});
beforeEach(async () => {
  // Like /run and /var/lib: a directory every user may enter.
  root = await mkdtemp(join(tmpdir(), 'flock-root-only-'));
  await chmod(root, 0o755);
  seen.length = 0;
});
afterEach(async () => {
  await server?.close();
  server = undefined;
  await rm(root, { recursive: true, force: true });
});

async function startAgentFiles(socketDir: string, storeDir: string) {
  server = await startCniServer({
    socketPath: join(socketDir, 'cni.sock'),
    handle: async (r) => {
      seen.push(r);
      return { ok: true };
    },
  });
  const store = new AllocationStore(join(storeDir, 'allocations.json'));
  await store.load();
  await store.putPending({
    containerID: 'c0ffee',
    ifname: 'eth0',
    namespace: 'default',
    pod: 'web',
    podUID: 'uid-web',
    ip6: '2001:db8:100::5',
    pinned: false,
    anycast: [],
  });
  return { socketPath: join(socketDir, 'cni.sock'), storePath: join(storeDir, 'allocations.json') };
}

describe('root only: the status socket', () => {
  it('is 0600 even in a directory open to all: nobody gets EACCES, root the status', async () => {
    await mkdir(join(root, 'run'), { mode: 0o755 });
    await chmod(join(root, 'run'), 0o755);
    const socketPath = join(root, 'run', 'status.sock');
    const status = await startStatusServer({
      socketPath,
      logger: silentLogger,
      status: () => ({ node: 'n' }) as unknown as AgentStatus,
    });
    try {
      expect(await mode(socketPath)).toBe(0o600);
      expect(await probeAsNobody(socketPath, [])).toEqual({ connect: 'EACCES', reads: [] });
      expect(await fetchStatus(socketPath)).toEqual({ node: 'n' });
    } finally {
      await status.close();
    }
  });
});

describe('root only: the agent socket and state files', () => {
  it('creates its directories 0700 and its files 0600; nobody gets EACCES, root is served', async () => {
    const { socketPath, storePath } = await startAgentFiles(
      join(root, 'run', 'flock'),
      join(root, 'lib', 'flock'),
    );
    expect(await mode(join(root, 'run', 'flock'))).toBe(0o700);
    expect(await mode(socketPath)).toBe(0o600);
    expect(await mode(join(root, 'lib', 'flock'))).toBe(0o700);
    expect(await mode(storePath)).toBe(0o600);

    const probe = await probeAsNobody(socketPath, [storePath]);
    expect(probe).toEqual({ connect: 'EACCES', reads: ['EACCES'] });
    expect(seen).toEqual([]);
    // The test can fail: root gets through to the same socket and file.
    expect(JSON.parse(await rawExchange(socketPath, JSON.stringify(request)))).toEqual({
      ok: true,
    });
    expect(seen.map((r) => r.command)).toEqual(['STATUS']);
  });

  it('keeps nobody out by the file modes alone when the directories are open to all', async () => {
    for (const dir of ['run', 'lib']) {
      await mkdir(join(root, dir), { mode: 0o755 });
      await chmod(join(root, dir), 0o755);
    }
    const { socketPath, storePath } = await startAgentFiles(join(root, 'run'), join(root, 'lib'));
    expect(await mode(join(root, 'run'))).toBe(0o755); // an existing safe directory is kept
    expect(await mode(socketPath)).toBe(0o600);
    expect(await mode(storePath)).toBe(0o600);

    const probe = await probeAsNobody(socketPath, [storePath]);
    expect(probe).toEqual({ connect: 'EACCES', reads: ['EACCES'] });
    expect(seen).toEqual([]);
  });

  it('the probe itself works: nobody connects to a socket that is open to all', async () => {
    // Guards the checks above against a probe that always fails.
    await mkdir(join(root, 'open'), { mode: 0o755 });
    await chmod(join(root, 'open'), 0o755);
    const { socketPath } = await startAgentFiles(join(root, 'open'), join(root, 'lib'));
    await chmod(socketPath, 0o666);
    const probe = await probeAsNobody(socketPath, [join(root, 'open')]);
    expect(probe.connect).toBe('connected');
  });
});
