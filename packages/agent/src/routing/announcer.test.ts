import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { BirdCommandError, renderBirdConfig, type BirdModel } from '@flock/bird';
import { createMemoryLogger } from '@flock/kube/testing';
import { eventually } from '@flock/testkit';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { FakeBird } from '../testing/fake-bird.js';
import { BirdAnnouncer, type AnnouncerState } from './announcer.js';

const model = (pinned: string[] = []): BirdModel => ({
  routerId: '192.0.2.1',
  asn: 64512,
  peers: [{ address: '2001:db8:ffff::1', asn: 65000 }],
  aggregates: ['2001:db8:100::/64'],
  pinned,
  anycast: [],
});

let dir: string;
let path: string;
let bird: FakeBird;
let announcer: BirdAnnouncer;
let states: AnnouncerState['status'][];

beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'flock-announcer-'));
  path = join(dir, 'bird.conf');
  bird = new FakeBird(path);
  states = [];
  announcer = new BirdAnnouncer({
    configPath: path,
    control: bird,
    logger: createMemoryLogger(),
    debounceMs: 0,
    retryMinMs: 20,
    retryMaxMs: 50,
    onState: (s) => states.push(s.status),
  });
});
afterEach(async () => {
  await announcer.close();
  await rm(dir, { recursive: true, force: true });
});

describe('BIRD announcer', () => {
  it('a BIRD that starts late still ends up running the latest model; the file is always the latest', async () => {
    announcer.announce(model(['2001:db8:200::1']));
    await eventually('unreachable', () => announcer.state.status === 'unreachable');
    expect(await readFile(path, 'utf8')).toBe(renderBirdConfig(model(['2001:db8:200::1'])));
    announcer.announce(model(['2001:db8:200::2']));
    await eventually(
      'the newer file',
      async () => (await readFile(path, 'utf8')) === renderBirdConfig(model(['2001:db8:200::2'])),
    );
    // A few retries later BIRD comes up (reading the file, as `bird -c` does).
    await new Promise((r) => setTimeout(r, 100));
    expect(bird.calls.filter((c) => c === 'configure').length).toBeGreaterThan(2);
    await bird.start();
    await eventually('applied', () => announcer.state.status === 'applied');
    expect(bird.running).toBe(renderBirdConfig(model(['2001:db8:200::2'])));
    expect(states).toEqual(['unreachable', 'applied']);
  });

  it('an unchanged model reloads nothing', async () => {
    bird.up = true;
    announcer.announce(model());
    await eventually('applied', () => announcer.state.status === 'applied');
    const configures = bird.configures;
    announcer.announce(model());
    announcer.announce(structuredClone(model()));
    await new Promise((r) => setTimeout(r, 50));
    expect(bird.configures).toBe(configures);
  });

  it('a refused config is reported and not retried; the next change is tried', async () => {
    bird.up = true;
    const text = 'bird.conf:3:1 syntax error';
    bird.failNextConfigure = new BirdCommandError('configure', {
      code: 8002,
      text,
      lines: [{ code: 8002, text }],
    });
    announcer.announce(model(['2001:db8:200::1']));
    await eventually('refused', () => announcer.state.status === 'refused');
    expect(announcer.state).toMatchObject({ message: expect.stringContaining('syntax error') });
    await new Promise((r) => setTimeout(r, 100));
    expect(bird.calls.filter((c) => c === 'configure')).toHaveLength(1);
    announcer.announce(model(['2001:db8:200::2']));
    await eventually('applied', () => announcer.state.status === 'applied');
  });

  it('does not create a missing config directory; reports it and writes once it exists', async () => {
    const { mkdir, stat } = await import('node:fs/promises');
    const missing = join(dir, 'shared', 'bird.conf');
    const elsewhere = new BirdAnnouncer({
      configPath: missing,
      control: new FakeBird(missing),
      logger: createMemoryLogger(),
      debounceMs: 0,
      retryMinMs: 20,
      retryMaxMs: 50,
    });
    try {
      elsewhere.announce(model());
      await eventually('failed', () => elsewhere.state.status === 'failed');
      expect(elsewhere.state).toMatchObject({ message: expect.stringContaining('does not exist') });
      await expect(stat(join(dir, 'shared'))).rejects.toThrow(/ENOENT/);
      await mkdir(join(dir, 'shared'));
      await eventually('written', () => readFile(missing, 'utf8'));
    } finally {
      await elsewhere.close();
    }
  });

  it('an invalid model is reported, and BIRD keeps what it has', async () => {
    bird.up = true;
    announcer.announce({ ...model(), routerId: '2001:db8::1' });
    await eventually('invalid', () => announcer.state.status === 'invalid');
    expect(bird.calls).toEqual([]);
  });
});
