// Per-request credentials: token files re-read after a minute, exec plugins run (argument
// array, env, KUBERNETES_EXEC_INFO), cached until they expire, re-run after a 401.
import { chmodSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { Authenticator, TOKEN_FILE_MAX_AGE_MS } from './authenticator.js';
import type { ExecConfig } from './credentials.js';

let dir: string;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'flock-auth-'));
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

/**
 * A plugin that counts its runs, records its argv, env and KUBERNETES_EXEC_INFO, and prints
 * the ExecCredential held in $dir/answer.json with "#" replaced by the run count.
 */
function plugin(answer: unknown): string {
  const path = join(dir, 'plugin.mjs');
  writeFileSync(
    path,
    `#!/usr/bin/env node
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
const dir = ${JSON.stringify(dir)};
const runs = existsSync(dir + '/runs') ? Number(readFileSync(dir + '/runs', 'utf8')) + 1 : 1;
writeFileSync(dir + '/runs', String(runs));
writeFileSync(dir + '/seen.json', JSON.stringify({ argv: process.argv.slice(2), a: process.env.A, info: JSON.parse(process.env.KUBERNETES_EXEC_INFO) }));
process.stdout.write(readFileSync(dir + '/answer.json', 'utf8').replaceAll('#', String(runs)));
`,
  );
  chmodSync(path, 0o755);
  setAnswer(answer);
  return path;
}
const setAnswer = (answer: unknown) =>
  writeFileSync(join(dir, 'answer.json'), JSON.stringify(answer));
const runs = () => Number(readFileSync(join(dir, 'runs'), 'utf8'));
const seen = () => JSON.parse(readFileSync(join(dir, 'seen.json'), 'utf8'));

const V1 = 'client.authentication.k8s.io/v1';
const exec = (command: string, extra: Partial<ExecConfig> = {}): ExecConfig => ({
  apiVersion: V1,
  command,
  ...extra,
});

describe('Authenticator', () => {
  it('sends a static token, or none', async () => {
    expect(await new Authenticator({ server: 'https://k', token: 't' }).current()).toEqual({
      authorization: 'Bearer t',
    });
    expect(await new Authenticator({ server: 'https://k' }).current()).toEqual({});
    expect(new Authenticator({ server: 'https://k', token: 't' }).refresh()).toBe(false);
  });

  it('re-reads a token file once it is a minute old, and at once after a 401', async () => {
    const file = join(dir, 'token');
    writeFileSync(file, 'one\n');
    let now = 0;
    const auth = new Authenticator({ server: 'https://k', tokenFile: file }, () => now);
    expect(await auth.current()).toEqual({ authorization: 'Bearer one' });
    writeFileSync(file, 'two');
    now = TOKEN_FILE_MAX_AGE_MS - 1;
    expect(await auth.current()).toEqual({ authorization: 'Bearer one' });
    now = TOKEN_FILE_MAX_AGE_MS;
    expect(await auth.current()).toEqual({ authorization: 'Bearer two' });
    writeFileSync(file, 'three');
    expect(auth.refresh()).toBe(true);
    expect(await auth.current()).toEqual({ authorization: 'Bearer three' });
    writeFileSync(file, '');
    auth.refresh();
    await expect(auth.current()).rejects.toThrow(`token file ${file} is empty`);
  });

  it('runs an exec plugin with its args and env, and caches the token until it expires', async () => {
    let now = Date.parse('2026-01-01T00:00:00Z');
    const command = plugin({
      apiVersion: V1,
      kind: 'ExecCredential',
      status: { token: 'tok-#', expirationTimestamp: '2026-01-01T00:10:00Z' },
    });
    const auth = new Authenticator(
      {
        server: 'https://k:6443',
        ca: { pem: 'CA' },
        exec: exec(command, {
          args: ['--x', 'a b'],
          env: [{ name: 'A', value: 'from-kubeconfig' }],
          provideClusterInfo: true,
        }),
      },
      () => now,
    );
    const [a, b] = await Promise.all([auth.current(), auth.current()]);
    expect(a).toEqual({ authorization: 'Bearer tok-1' });
    expect(b).toEqual(a); // concurrent requests share one run
    expect(seen()).toEqual({
      argv: ['--x', 'a b'], // an argument array, no shell
      a: 'from-kubeconfig',
      info: {
        apiVersion: V1,
        kind: 'ExecCredential',
        spec: {
          interactive: false,
          cluster: {
            server: 'https://k:6443',
            certificateAuthorityData: Buffer.from('CA').toString('base64'),
          },
        },
      },
    });
    now += 9 * 60_000;
    expect(await auth.current()).toEqual({ authorization: 'Bearer tok-1' });
    now += 60_000;
    expect(await auth.current()).toEqual({ authorization: 'Bearer tok-2' });
    // A 401: run it again even though it has not expired.
    expect(auth.refresh()).toBe(true);
    expect(await auth.current()).toEqual({ authorization: 'Bearer tok-3' });
    expect(runs()).toBe(3);
  });

  it('takes a client certificate from an exec plugin (v1beta1), cached without expiry', async () => {
    const command = plugin({
      apiVersion: 'client.authentication.k8s.io/v1beta1',
      kind: 'ExecCredential',
      status: { clientCertificateData: 'CERT #', clientKeyData: 'KEY #' },
    });
    const auth = new Authenticator({
      server: 'https://k',
      exec: exec(command, { apiVersion: 'client.authentication.k8s.io/v1beta1' }),
    });
    expect(await auth.current()).toEqual({ identity: { cert: 'CERT 1', key: 'KEY 1' } });
    expect(await auth.current()).toEqual({ identity: { cert: 'CERT 1', key: 'KEY 1' } });
    expect(runs()).toBe(1);
  });

  it('says what is wrong with a plugin', async () => {
    const command = plugin({ apiVersion: V1, kind: 'ExecCredential', status: {} });
    const run = (e: ExecConfig) => new Authenticator({ server: 'https://k', exec: e }).current();
    await expect(run(exec(command))).rejects.toThrow(
      `exec credential plugin ${command}: invalid ExecCredential: status: needs a token or both`,
    );
    setAnswer({
      apiVersion: 'client.authentication.k8s.io/v1beta1',
      kind: 'ExecCredential',
      status: { token: 't' },
    });
    await expect(run(exec(command))).rejects.toThrow(/answered .*v1beta1, asked for .*\/v1/);
    writeFileSync(join(dir, 'answer.json'), 'not json');
    await expect(run(exec(command))).rejects.toThrow(/the output is not JSON/);
    await expect(
      run(exec(join(dir, 'absent'), { installHint: 'install it with: apt install absent' })),
    ).rejects.toThrow(/absent \(install it with: apt install absent\):.*not found/);
  });

  it('does not run a failing plugin for every request: it backs off from 1 s, doubling, until it succeeds', async () => {
    let now = 0;
    const command = plugin({ apiVersion: V1, kind: 'ExecCredential', status: { token: 'tok-#' } });
    writeFileSync(join(dir, 'answer.json'), 'not json');
    const auth = new Authenticator({ server: 'https://k', exec: exec(command) }, () => now);
    await expect(auth.current()).rejects.toThrow(/the output is not JSON$/);
    const errors = [];
    for (let i = 0; i < 5; i++) errors.push(await auth.current().catch((e: Error) => e.message));
    expect(runs()).toBe(1);
    expect(errors).toEqual(
      new Array(5).fill(expect.stringMatching(/not JSON \(run again in 1 s\)$/)),
    );
    now = 999;
    await expect(auth.current()).rejects.toThrow(/run again in 1 s/);
    now = 1000;
    await expect(auth.current()).rejects.toThrow(/the output is not JSON$/);
    expect(runs()).toBe(2);
    now = 2999; // the second failure waits 2 s
    await expect(auth.current()).rejects.toThrow(/run again in 1 s/);
    expect(runs()).toBe(2);
    setAnswer({ apiVersion: V1, kind: 'ExecCredential', status: { token: 'tok-#' } });
    now = 3000;
    expect(await auth.current()).toEqual({ authorization: 'Bearer tok-3' });
    // Fixed: a later failure starts from 1 s again.
    auth.refresh();
    writeFileSync(join(dir, 'answer.json'), 'not json');
    await expect(auth.current()).rejects.toThrow(/not JSON$/);
    now = 4000;
    await expect(auth.current()).rejects.toThrow(/not JSON$/);
    expect(runs()).toBe(5);
  });
});
