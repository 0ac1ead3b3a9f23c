import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { BirdCommandError, BirdProtocolError, renderBirdConfig, type BirdModel } from '@flock/bird';
import { createMemoryLogger } from '@flock/kube/testing';
import { eventually } from '@flock/testkit';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { FakeBird } from '../../testing/fake-bird.js';
import { BirdAnnouncer, type AnnouncerState } from './announcer.js';

/** The real setTimeout, for letting file I/O finish while the fake clock stands still. */
const realSetTimeout = globalThis.setTimeout;
const realPause = (ms: number) => new Promise((r) => realSetTimeout(r, ms));

/** Advance the fake clock in steps of `step` ms, each followed by a real pause for I/O. */
async function run(ms: number, step: number, until: () => boolean = () => false) {
  for (let t = 0; t < ms && !until(); t += step) {
    await vi.advanceTimersByTimeAsync(step);
    await realPause(5);
  }
}

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
/** Every model BIRD was found running (reloaded with it, or already running it). */
let applied: BirdModel[];

beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'flock-announcer-'));
  path = join(dir, 'bird.conf');
  bird = new FakeBird(path);
  states = [];
  applied = [];
  announcer = new BirdAnnouncer({
    configPath: path,
    control: bird,
    logger: createMemoryLogger(),
    debounceMs: 0,
    retryMinMs: 20,
    retryMaxMs: 50,
    unreachableRetryMs: 20,
    onState: (s) => states.push(s.status),
    onApplied: (m) => applied.push(m),
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
    // Its socket asked a few times (no reload, no file written), BIRD comes up (reading the
    // file, as `bird -c` does).
    await eventually(
      'its socket asked a few times',
      () => bird.calls.filter((c) => c === 'show').length > 2,
    );
    expect(bird.calls.filter((c) => c === 'configure')).toHaveLength(2);
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

  it('a model that renders to the bytes BIRD runs reloads nothing', async () => {
    bird.up = true;
    announcer.announce(model(['2001:db8:200::1', '2001:db8:200::2']));
    await eventually('applied', () => applied.length === 1);
    const sameBytes = model(['2001:DB8:200::2', '2001:db8:200::1']); // other order and spelling
    announcer.announce(sameBytes);
    await eventually('BIRD runs it', () => applied.length === 2);
    expect(applied[1]).toEqual(sameBytes);
    expect(bird.calls.filter((c) => c === 'configure')).toHaveLength(1);
  });

  it('reloads the same bytes again after a failure where it is unknown whether BIRD took the config', async () => {
    bird.up = true;
    const patient = new BirdAnnouncer({
      configPath: path,
      control: bird,
      logger: createMemoryLogger(),
      debounceMs: 0,
      retryMinMs: 60_000, // no retry of the failed model comes between
      retryMaxMs: 60_000,
    });
    try {
      patient.announce(model());
      await eventually('applied', () => patient.state.status === 'applied');
      bird.failNextConfigure = new BirdProtocolError('no complete reply from BIRD within 60000 ms');
      patient.announce(model(['2001:db8:200::1']));
      await eventually('failed', () => patient.state.status === 'failed');
      patient.announce(model());
      await eventually('applied again', () => patient.state.status === 'applied');
      expect(bird.calls.filter((c) => c === 'configure')).toHaveLength(3);
    } finally {
      await patient.close();
    }
  });

  it('a model BIRD ran before is written again when the file took another while BIRD was away', async () => {
    bird.up = true;
    announcer.announce(model());
    await eventually('applied', () => announcer.state.status === 'applied');
    bird.stop();
    announcer.announce(model(['2001:db8:200::1']));
    await eventually('unreachable', () => announcer.state.status === 'unreachable');
    announcer.announce(model()); // what BIRD last accepted, but no longer what the file holds
    await eventually(
      'the file holds it again',
      async () => (await readFile(path, 'utf8')) === renderBirdConfig(model()),
    );
    expect(announcer.state.status).toBe('unreachable');
    await bird.start();
    await eventually('applied', () => announcer.state.status === 'applied');
    expect(bird.running).toBe(renderBirdConfig(model()));
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

  it('a refused config is taken back out of the file: a restarting BIRD reads what it ran', async () => {
    bird.up = true;
    announcer.announce(model());
    await eventually('applied', () => announcer.state.status === 'applied');
    bird.failNextConfigure = new BirdCommandError('configure', {
      code: 8002,
      text: 'bird.conf:3:1 syntax error',
      lines: [{ code: 8002, text: 'bird.conf:3:1 syntax error' }],
    });
    announcer.announce(model(['2001:db8:200::1']));
    await eventually('refused', () => announcer.state.status === 'refused');
    expect(await readFile(path, 'utf8')).toBe(renderBirdConfig(model()));
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

describe('BIRD announcer timing (production defaults, fake clock)', () => {
  let timed: BirdAnnouncer;
  beforeEach(() => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'Date'] });
  });
  afterEach(async () => {
    await timed?.close();
    vi.useRealTimers();
  });

  it('a BIRD away for 20 s gets the model within 1 s of answering on its socket', async () => {
    timed = new BirdAnnouncer({ configPath: path, control: bird, logger: createMemoryLogger() });
    timed.announce(model(['2001:db8:200::1']));
    await run(20_000, 100);
    expect(timed.state.status).toBe('unreachable');
    await bird.start();
    const up = Date.now();
    await run(3_000, 10, () => timed.state.status === 'applied');
    expect(timed.state.status).toBe('applied');
    expect(Date.now() - up).toBeLessThanOrEqual(1_000);
    expect(bird.running).toBe(renderBirdConfig(model(['2001:db8:200::1'])));
  });

  it('a reload that fails otherwise is retried backing off from 1 s to 10 s, with jitter', async () => {
    bird.up = true;
    bird.failConfigure = new Error('no complete reply from BIRD within 60000 ms');
    const delays: number[] = [];
    const schedule = globalThis.setTimeout;
    vi.spyOn(globalThis, 'setTimeout').mockImplementation((fn: () => void, ms?: number) => {
      if ((ms ?? 0) >= 500) delays.push(ms ?? 0); // not the 200 ms debounce
      return schedule(fn, ms);
    });
    timed = new BirdAnnouncer({
      configPath: path,
      control: bird,
      logger: createMemoryLogger(),
      random: () => 0.5,
    });
    timed.announce(model());
    await run(60_000, 100, () => delays.length >= 6);
    expect(timed.state.status).toBe('failed');
    // 20 % jitter, drawn at 0.5: each delay is 90 % of 1, 2, 4, 8, 10, 10 s.
    expect(delays.slice(0, 6)).toEqual([900, 1800, 3600, 7200, 9000, 9000]);
  });
});
