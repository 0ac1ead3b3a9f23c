import { describe, expect, it } from 'vitest';
import { CommandError, programsRun, run } from './run.js';

describe('run', () => {
  it('passes arguments verbatim, without a shell', async () => {
    const r = await run('printf', ['%s|', 'a b', '$(id)', ';rm -rf /']);
    expect(r.stdout).toBe('a b|$(id)|;rm -rf /|');
  });

  it('feeds stdin', async () => {
    expect((await run('cat', [], { input: 'hello' })).stdout).toBe('hello');
  });

  it('rejects with stderr and exit code', async () => {
    const err = await run('sh', ['-c', 'echo bad >&2; exit 3']).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(CommandError);
    expect((err as CommandError).code).toBe(3);
    expect((err as Error).message).toContain('bad');
  });

  it('accepts listed exit codes', async () => {
    expect((await run('sh', ['-c', 'exit 2'], { okCodes: [0, 2] })).code).toBe(2);
  });

  it('says when the program is missing', async () => {
    await expect(run('no-such-program-flock', [])).rejects.toThrow(/not found on PATH/);
  });

  it('counts the programs it ran by name, failed ones too', async () => {
    const before = (name: string) => programsRun().get(name) ?? 0;
    const [t, f] = [before('true'), before('false')];
    await run('/bin/true', []);
    await run('true', []);
    await run('false', []).catch(() => undefined);
    expect(programsRun().get('true')).toBe(t + 2);
    expect(programsRun().get('false')).toBe(f + 1);
  });

  it('kills a program that runs too long', async () => {
    await expect(run('sleep', ['5'], { timeoutMs: 100 })).rejects.toThrow(/timed out/);
  });
});
