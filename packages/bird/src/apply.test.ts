// applyBirdConfig with a fake control (the real twin: bgp.kernel.test.ts with a real BIRD) and a
// real file in a temp directory.
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { applyBirdConfig, type ApplyBirdConfigOptions } from './apply.js';
import {
  BirdUnavailableError,
  type BirdControl,
  type ConfigureOptions,
  type ConfigureResult,
} from './client.js';
import { BirdCommandError, BirdProtocolError } from './reply.js';

/** Records configure calls with the file content BIRD would read; fails on demand. */
class FakeControl implements Pick<BirdControl, 'configure'> {
  readonly reloads: { options: ConfigureOptions; content: string }[] = [];
  failure: Error | undefined;

  constructor(private readonly path: string) {}

  async configure(options: ConfigureOptions = {}): Promise<ConfigureResult> {
    this.reloads.push({ options, content: readFileSync(this.path, 'utf8') });
    await Promise.resolve();
    if (this.failure) throw this.failure;
    return { code: 3, message: 'Reconfigured' };
  }
}

const refusal = () =>
  new BirdCommandError('configure', {
    code: 8002,
    text: 'bird.conf:12:3 syntax error',
    lines: [{ code: 8002, text: 'bird.conf:12:3 syntax error' }],
  });

const NEW = 'router id 192.0.2.10;\n# new\n';

let dir: string;
let path: string;
let control: FakeControl;

beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'flock-bird-apply-'));
  path = join(dir, 'bird.conf');
  control = new FakeControl(path);
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

const apply = (options: Partial<ApplyBirdConfigOptions> = {}) =>
  applyBirdConfig({ configPath: path, text: NEW, control, ...options });

describe('applyBirdConfig', () => {
  it('writes the file (0600) before BIRD is told to read it, and reports it applied', async () => {
    writeFileSync(path, '# old\n', { mode: 0o644 });
    expect(await apply()).toEqual({
      status: 'applied',
      result: { code: 3, message: 'Reconfigured' },
    });
    expect(control.reloads).toEqual([{ options: { check: false }, content: NEW }]);
    expect(readFileSync(path, 'utf8')).toBe(NEW);
    expect(statSync(path).mode & 0o777).toBe(0o600);
  });

  it('runs configure check first when asked', async () => {
    await apply({ check: true });
    expect(control.reloads.map((r) => r.options)).toEqual([{ check: true }]);
  });

  it('puts the config the caller names back into the file when BIRD refuses', async () => {
    writeFileSync(path, '# neither accepted nor new\n');
    control.failure = refusal();
    const outcome = await apply({ restore: '# last accepted\n' });
    expect(outcome).toMatchObject({ status: 'refused', error: { code: 8002 } });
    expect(outcome.status === 'refused' && outcome.error.location?.line).toBe(12);
    expect(control.reloads[0]?.content).toBe(NEW); // BIRD was asked with the new file
    expect(readFileSync(path, 'utf8')).toBe('# last accepted\n'); // and the file is back
    expect(statSync(path).mode & 0o777).toBe(0o600);
  });

  it('without one, puts back what the file held before', async () => {
    writeFileSync(path, '# from the image\n');
    control.failure = refusal();
    expect((await apply()).status).toBe('refused');
    expect(readFileSync(path, 'utf8')).toBe('# from the image\n');
  });

  it('removes the file when a refused config is the first there was', async () => {
    control.failure = refusal();
    expect((await apply()).status).toBe('refused');
    expect(control.reloads).toHaveLength(1);
    expect(existsSync(path)).toBe(false);
  });

  it('keeps the new file when BIRD is not up: BIRD reads it when it starts', async () => {
    writeFileSync(path, '# old\n');
    const error = new BirdUnavailableError(
      '/run/bird.ctl',
      20,
      Object.assign(new Error('x'), { code: 'ENOENT' }),
    );
    control.failure = error;
    expect(await apply({ restore: '# old\n' })).toEqual({ status: 'unreachable', error });
    expect(readFileSync(path, 'utf8')).toBe(NEW);
  });

  it('reports any other reload error as failed and keeps the new file', async () => {
    writeFileSync(path, '# old\n');
    control.failure = new BirdProtocolError('no complete reply from BIRD within 60000 ms');
    const outcome = await apply({ restore: '# old\n' });
    expect(outcome).toMatchObject({ status: 'failed', error: { message: /no complete reply/ } });
    expect(readFileSync(path, 'utf8')).toBe(NEW);
  });

  it('reports a write failure as failed without asking BIRD', async () => {
    mkdirSync(join(path, 'in-the-way'), { recursive: true }); // a directory where the file goes
    const outcome = await apply({ restore: '# old\n' });
    expect(outcome).toMatchObject({ status: 'failed', error: { message: /EISDIR|ENOTEMPTY/ } });
    expect(control.reloads).toHaveLength(0);
    expect(statSync(path).isDirectory()).toBe(true);
  });
});
