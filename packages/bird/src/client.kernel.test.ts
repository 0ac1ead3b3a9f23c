// BirdClient against a real BIRD in a namespace of the test's own (the twin of the fake BIRD
// in client.test.ts): real replies, real refusals, real start-up.
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as delay } from 'node:timers/promises';
import { Netns, requireKernelTier } from '@flock/testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BirdProcess, type BirdPaths } from '../testing/bird-process.js';
import { BirdClient, BirdUnavailableError } from './client.js';
import type { BirdModel } from './model.js';
import { BirdCommandError, parseReplies } from './reply.js';
import { BIRD_NAMES, renderBirdConfig } from './render.js';
import { peerStatuses, routeCounts } from './status.js';

const model: BirdModel = {
  routerId: '192.0.2.10',
  asn: 65001,
  // Nobody answers at this address: the session stays down.
  peers: [{ address: '2001:db8:ffff::1', asn: 65000, holdTime: 9, keepaliveTime: 3 }],
  aggregates: ['2001:db8:1::/64', '198.51.100.0/26'],
  pinned: ['2001:db8:99::7', '2001:db8:99::8', '192.0.2.77'],
  anycast: ['2001:db8:aa::1'],
};

const recorded = (name: string) =>
  readFileSync(join(import.meta.dirname, '__fixtures__', 'replies', `${name}.txt`), 'utf8');

describe('BirdClient with a real BIRD (kernel)', () => {
  let ns: Netns;
  let dir: string;
  let paths: BirdPaths;
  const birds: BirdProcess[] = [];
  let client: BirdClient;

  beforeAll(async () => {
    requireKernelTier('bird');
    ns = await Netns.create('brdc');
    dir = mkdtempSync(join(tmpdir(), 'flock-bird-client-'));
    paths = {
      configPath: join(dir, 'bird.conf'),
      socketPath: join(dir, 'bird.ctl'),
      pidPath: join(dir, 'bird.pid'),
    };
    writeFileSync(paths.configPath, renderBirdConfig(model), { mode: 0o600 });
    birds.push(await BirdProcess.start((f, a) => ns.spawn(f, a), paths));
    client = new BirdClient({ socketPath: paths.socketPath });
  });

  afterAll(async () => {
    for (const b of birds) await b.stop();
    await ns?.destroy();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it('lists the rendered protocols, answering like the recorded replies', async () => {
    const reply = await client.command('show protocols');
    const recordedHeading = parseReplies(recorded('show-protocols-node'))[0]?.lines[0];
    expect(reply.lines[0]).toEqual(recordedHeading);
    const rows = await client.showProtocols();
    expect(rows.map((r) => r.name)).toEqual([
      BIRD_NAMES.device,
      'flock_aggregates6',
      'flock_aggregates4',
      'flock_pinned6',
      'flock_pinned4',
      'flock_anycast6',
      'flock_anycast4',
      'peer_2001_db8_ffff__1',
    ]);
    expect(rows.filter((r) => r.proto === 'Static').every((r) => r.state === 'up')).toBe(true);
    expect(rows.at(-1)?.since).toMatch(/^\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}$/); // timeformat iso long
  });

  it('reports route counts per protocol and the state of the peer', async () => {
    const all = await client.showProtocolsAll();
    const imported = Object.fromEntries(all.map((p) => [p.name, routeCounts(p).imported]));
    expect(imported).toMatchObject({
      flock_aggregates6: 1,
      flock_aggregates4: 1,
      flock_pinned6: 2,
      flock_pinned4: 1,
      flock_anycast6: 1,
      flock_anycast4: 0,
    });
    const [peer] = peerStatuses(model.peers, all);
    expect(peer).toMatchObject({ protocol: 'peer_2001_db8_ffff__1', routesExported: 0 });
    expect(['Idle', 'Connect', 'Active']).toContain(peer?.state);
    const one = await client.showProtocolsAll('peer_2001_db8_ffff__1');
    expect(one.map((p) => [p.name, p.neighborAddress, p.neighborAs])).toEqual([
      ['peer_2001_db8_ffff__1', '2001:db8:ffff::1', 65000],
    ]);
    expect(one[0]?.channels.map((c) => [c.name, c.inputFilter, c.outputFilter])).toEqual([
      ['ipv6', 'REJECT', 'flock_export6'],
      ['ipv4', 'REJECT', 'flock_export4'],
    ]);
    expect(await client.showProtocolsAll('no_such_protocol')).toEqual([]);
  });

  it('reconfigures, with and without check, and from another file', async () => {
    await expect(client.configure()).resolves.toEqual({ code: 3, message: 'Reconfigured' });
    await expect(client.configure({ check: true })).resolves.toMatchObject({ code: 3 });
    const other = join(dir, 'other.conf');
    writeFileSync(
      other,
      renderBirdConfig({ ...model, pinned: [...model.pinned, '2001:db8:99::9'] }),
    );
    await expect(client.configure({ file: other })).resolves.toMatchObject({ code: 3 });
    const [pinned6] = await client.showProtocolsAll('flock_pinned6');
    expect(routeCounts(pinned6!).imported).toBe(3);
    await client.configure({ file: paths.configPath }); // back to the file BIRD started with
  });

  it("refuses a broken config at once with BIRD's message and line, and keeps the running one", async () => {
    const broken = join(dir, 'broken.conf');
    writeFileSync(broken, `${renderBirdConfig(model)}protocol static oops {\n  ipv6\n}\n`);
    const lines = readFileSync(broken, 'utf8').split('\n').length - 1;
    for (const check of [false, true]) {
      const error = await client.configure({ file: broken, check }).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(BirdCommandError);
      expect((error as BirdCommandError).code).toBe(8002);
      expect((error as BirdCommandError).location).toEqual({
        file: broken,
        line: lines,
        column: 1,
      });
      expect((error as BirdCommandError).message).toMatch(/syntax error/);
    }
    const [pinned6] = await client.showProtocolsAll('flock_pinned6');
    expect(routeCounts(pinned6!).imported).toBe(2);
    expect((await client.showProtocols()).map((r) => r.name)).not.toContain('oops');
    await expect(client.command('show nonsense')).rejects.toMatchObject({ code: 9001 });
  });

  it('waits for a BIRD that starts late, and gives up on one that does not come', async () => {
    const late: BirdPaths = {
      configPath: join(dir, 'late.conf'),
      socketPath: join(dir, 'late.ctl'),
      pidPath: join(dir, 'late.pid'),
    };
    // No peers: a second BIRD in the namespace must not compete for the BGP port.
    writeFileSync(late.configPath, renderBirdConfig({ ...model, peers: [] }));
    const status = new BirdClient({ socketPath: late.socketPath }).command('show status');
    await delay(1200);
    const bird = await BirdProcess.start((f, a) => ns.spawn(f, a), late);
    birds.push(bird);
    expect((await status).text).toBe('Daemon is up and running');
    await bird.stop();
    const error = await new BirdClient({
      socketPath: late.socketPath,
      attempts: 3,
      retryDelayMs: 50,
    })
      .showProtocols()
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(BirdUnavailableError);
    expect(['ENOENT', 'ECONNREFUSED']).toContain((error as BirdUnavailableError).lastError.code);
  });
});
