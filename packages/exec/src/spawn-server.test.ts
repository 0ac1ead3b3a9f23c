// The spawn server keeps run()'s contract (the same cases as run.test.ts, through the child),
// survives its child dying, and setRunner routes run() through it.
import { afterAll, describe, expect, it } from 'vitest';
import { CommandError, run, setRunner } from './run.js';
import { SpawnServer } from './spawn-server.js';

const server = new SpawnServer();
afterAll(() => server.stop());

describe('SpawnServer', () => {
  it('passes arguments verbatim, feeds stdin, honours env and okCodes', async () => {
    expect((await server.run('printf', ['%s|', 'a b', '$(id)', ';rm -rf /'])).stdout).toBe(
      'a b|$(id)|;rm -rf /|',
    );
    expect((await server.run('cat', [], { input: 'hello' })).stdout).toBe('hello');
    expect(
      (await server.run('sh', ['-c', 'printf %s "$FLOCK_X"'], { env: { FLOCK_X: 'y' } })).stdout,
    ).toBe('y');
    expect((await server.run('sh', ['-c', 'exit 2'], { okCodes: [0, 2] })).code).toBe(2);
  });

  it('rejects with the same CommandError as run()', async () => {
    const direct = await run('sh', ['-c', 'echo bad >&2; exit 3']).catch((e: unknown) => e);
    const served = await server.run('sh', ['-c', 'echo bad >&2; exit 3']).catch((e: unknown) => e);
    expect(served).toBeInstanceOf(CommandError);
    expect(served).toMatchObject({ code: 3, stderr: 'bad\n', message: (direct as Error).message });
    await expect(server.run('no-such-program-flock', [])).rejects.toThrow(/not found on PATH/);
    await expect(server.run('sleep', ['5'], { timeoutMs: 100 })).rejects.toThrow(/timed out/);
  });

  it('runs requests concurrently and answers each its own', async () => {
    const rs = await Promise.all(
      Array.from({ length: 20 }, (_, i) =>
        server.run('sh', ['-c', `sleep 0.0${i % 5}; echo ${i}`]),
      ),
    );
    expect(rs.map((r) => r.stdout.trim())).toEqual(Array.from({ length: 20 }, (_, i) => `${i}`));
  });

  it('fails what is in flight when the child dies, and starts a new child for the next', async () => {
    const s = new SpawnServer();
    const pid = Number((await s.run('sh', ['-c', 'echo $PPID'])).stdout.trim());
    const inFlight = s.run('sleep', ['5']);
    process.kill(pid, 'SIGKILL');
    await expect(inFlight).rejects.toThrow(/spawn server exited/);
    const again = Number((await s.run('sh', ['-c', 'echo $PPID'])).stdout.trim());
    expect(again).not.toBe(pid);
    await s.stop();
    await expect(s.run('true', [])).rejects.toThrow(/stopped/);
  });

  it('setRunner routes every run() through the server', async () => {
    setRunner(server.run);
    try {
      const parent = (await run('sh', ['-c', 'echo $PPID'])).stdout.trim();
      expect(Number(parent)).not.toBe(process.pid);
    } finally {
      setRunner(undefined);
    }
    expect(Number((await run('sh', ['-c', 'echo $PPID'])).stdout.trim())).toBe(process.pid);
  });
});
