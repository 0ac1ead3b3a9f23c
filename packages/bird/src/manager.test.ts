// BirdConfigManager with a fake control (the real twin: bgp.kernel.test.ts with a real BIRD)
// and a real file in a temp directory.
import { mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import {
  BirdUnavailableError,
  type BirdControl,
  type ConfigureOptions,
  type ConfigureResult,
} from './client.js';
import { BirdConfigManager, type ReloadOutcome } from './manager.js';
import type { BirdModel } from './model.js';
import { BirdCommandError, BirdProtocolError } from './reply.js';
import { renderBirdConfig } from './render.js';

/** Records configure calls with the file content BIRD would read; fails on demand. */
class FakeControl implements BirdControl {
  readonly reloads: { options: ConfigureOptions; content: string }[] = [];
  failures: Error[] = [];
  /** While set, configure() waits for it: a reload that is still running. */
  gate: Promise<void> | undefined;

  constructor(private readonly path: string) {}

  async configure(options: ConfigureOptions = {}): Promise<ConfigureResult> {
    this.reloads.push({ options, content: readFileSync(this.path, 'utf8') });
    await this.gate;
    const failure = this.failures.shift();
    if (failure) throw failure;
    return { code: 3, message: 'Reconfigured' };
  }
  showProtocols = () => Promise.resolve([]);
  showProtocolsAll = () => Promise.resolve([]);
}

const model = (pinned: string[] = []): BirdModel => ({
  routerId: '192.0.2.10',
  asn: 65001,
  peers: [{ address: '2001:db8:ffff::1', asn: 65000, password: 'pw' }],
  aggregates: ['2001:db8:1::/64'],
  pinned,
  anycast: [],
});

const refusal = () =>
  new BirdCommandError('configure', {
    code: 8002,
    text: 'bird.conf:12:3 syntax error',
    lines: [{ code: 8002, text: 'bird.conf:12:3 syntax error' }],
  });

let dir: string;
let path: string;
let control: FakeControl;
let manager: BirdConfigManager;

beforeEach(() => {
  vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });
  dir = mkdtempSync(join(tmpdir(), 'flock-bird-manager-'));
  path = join(dir, 'bird.conf');
  control = new FakeControl(path);
  manager = new BirdConfigManager({ configPath: path, control });
});
afterEach(async () => {
  await manager.close();
  vi.useRealTimers();
  rmSync(dir, { recursive: true, force: true });
});

/** Let the debounce run out and the reload finish. */
async function settle<T>(promise: Promise<T>): Promise<T> {
  await vi.advanceTimersByTimeAsync(500);
  return promise;
}

describe('BirdConfigManager', () => {
  it('writes the rendered config (0600) and reloads once the debounce has passed', async () => {
    const outcome = manager.update(model());
    await vi.advanceTimersByTimeAsync(499);
    expect(control.reloads).toHaveLength(0);
    expect(await settle(outcome)).toEqual({
      status: 'applied',
      result: { code: 3, message: 'Reconfigured' },
    });
    expect(control.reloads).toEqual([
      { options: { check: false }, content: renderBirdConfig(model()) },
    ]);
    expect(statSync(path).mode & 0o777).toBe(0o600);
    expect(manager.appliedConfig).toBe(renderBirdConfig(model()));
  });

  it('does nothing when the bytes equal the config BIRD has', async () => {
    await settle(manager.update(model(['2001:db8:99::1', '2001:db8:99::2'])));
    // Same prefixes, other order and spelling: same bytes.
    expect(await manager.update(model(['2001:DB8:99::2', '2001:db8:99::1']))).toEqual({
      status: 'unchanged',
    });
    expect(control.reloads).toHaveLength(1);
  });

  it('collapses a burst into one reload of the latest model', async () => {
    const outcomes = [
      manager.update(model(['2001:db8:99::1'])),
      manager.update(model(['2001:db8:99::2'])),
    ];
    await vi.advanceTimersByTimeAsync(300);
    outcomes.push(manager.update(model(['2001:db8:99::3'])));
    const settled = await settle(Promise.all(outcomes));
    expect(settled.map((o) => o.status)).toEqual(['applied', 'applied', 'applied']);
    expect(control.reloads).toHaveLength(1);
    expect(control.reloads[0]?.content).toBe(renderBirdConfig(model(['2001:db8:99::3'])));
  });

  it('runs configure check first when asked', async () => {
    manager = new BirdConfigManager({ configPath: path, control, check: true, debounceMs: 10 });
    const outcome = manager.update(model());
    await vi.advanceTimersByTimeAsync(10);
    await outcome;
    expect(control.reloads[0]?.options).toEqual({ check: true });
  });

  it('puts the last good config back into the file when BIRD refuses a new one', async () => {
    await settle(manager.update(model()));
    control.failures.push(refusal());
    const outcome = await settle(manager.update(model(['2001:db8:99::1'])));
    expect(outcome.status).toBe('refused');
    expect((outcome as Extract<ReloadOutcome, { status: 'refused' }>).error.location?.line).toBe(
      12,
    );
    expect(control.reloads[1]?.content).toBe(renderBirdConfig(model(['2001:db8:99::1']))); // BIRD was asked
    expect(readFileSync(path, 'utf8')).toBe(renderBirdConfig(model())); // and the file is back
    expect(manager.appliedConfig).toBe(renderBirdConfig(model()));
  });

  it('restores what was in the file before when the very first config is refused', async () => {
    writeFileSync(path, '# from the image\n');
    control.failures.push(refusal());
    expect((await settle(manager.update(model()))).status).toBe('refused');
    expect(readFileSync(path, 'utf8')).toBe('# from the image\n');
  });

  it('keeps the new file when BIRD is not up, and reloads on the next update', async () => {
    control.failures.push(
      new BirdUnavailableError(
        '/run/bird.ctl',
        20,
        Object.assign(new Error('x'), { code: 'ENOENT' }),
      ),
    );
    expect((await settle(manager.update(model()))).status).toBe('unreachable');
    expect(readFileSync(path, 'utf8')).toBe(renderBirdConfig(model())); // BIRD reads it when it starts
    expect((await settle(manager.update(model()))).status).toBe('applied');
    expect(control.reloads).toHaveLength(2);
  });

  it('reloads again after a failure where it is unknown whether BIRD took the config', async () => {
    await settle(manager.update(model()));
    control.failures.push(new BirdProtocolError('timeout'));
    expect((await settle(manager.update(model(['2001:db8:99::1'])))).status).toBe('failed');
    expect((await settle(manager.update(model()))).status).toBe('applied');
    expect(control.reloads).toHaveLength(3);
  });

  it('reports a write failure without reloading', async () => {
    manager = new BirdConfigManager({ configPath: join(dir, 'missing', 'bird.conf'), control });
    expect((await settle(manager.update(model()))).status).toBe('failed');
    expect(control.reloads).toHaveLength(0);
  });

  it('emits every outcome as "settled"', async () => {
    const seen: string[] = [];
    manager.on('settled', (o) => seen.push(o.status));
    await settle(manager.update(model()));
    control.failures.push(refusal());
    await settle(manager.update(model(['2001:db8:99::1'])));
    expect(seen).toEqual(['applied', 'refused']);
  });

  it('applies an update made while a reload runs after that reload, even if it equals the applied config', async () => {
    await settle(manager.update(model()));
    let release = () => {};
    control.gate = new Promise((resolve) => (release = resolve));
    const second = manager.update(model(['2001:db8:99::1']));
    await vi.advanceTimersByTimeAsync(500);
    await vi.waitFor(() => expect(control.reloads).toHaveLength(2)); // BIRD is busy with the second
    const back = manager.update(model()); // equals what BIRD last accepted, but not what it will have
    control.gate = undefined;
    release();
    expect((await second).status).toBe('applied');
    expect((await settle(back)).status).toBe('applied');
    expect(control.reloads.map((r) => r.content)).toEqual([
      renderBirdConfig(model()),
      renderBirdConfig(model(['2001:db8:99::1'])),
      renderBirdConfig(model()),
    ]);
  });

  it('flush() applies at once; close() cancels what is pending', async () => {
    const first = manager.update(model());
    await manager.flush();
    expect((await first).status).toBe('applied');
    const pending = manager.update(model(['2001:db8:99::1']));
    await manager.close();
    expect(await pending).toEqual({ status: 'cancelled' });
    expect(control.reloads).toHaveLength(1);
  });

  it('rejects an invalid model without touching the file', async () => {
    await expect(manager.update({ ...model(), routerId: 'nope' })).rejects.toThrow(/routerId/);
    expect(() => statSync(path)).toThrow(/ENOENT/);
  });
});
