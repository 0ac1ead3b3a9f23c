import { mkdtemp, readFile, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { NodeBgpPeer } from '@flock/api';
import { createMemoryLogger } from '@flock/kube/testing';
import { FakeApiServer } from '@flock/kube/testing';
import { beforeEach, describe, expect, it } from 'vitest';
import { KubeApiError, SECRETS } from '@flock/kube';
import { passwordFile } from './password-file.js';
import { PeerPasswords, apiSecretReader, type SecretReader } from './peer-secrets.js';

const b64 = (s: string) => Buffer.from(s).toString('base64');
const ref = (name: string, extra: { namespace?: string; key?: string } = {}) => ({
  name,
  key: extra.key ?? 'password',
  ...(extra.namespace ? { namespace: extra.namespace } : {}),
});
const peer = (address: string, secret?: ReturnType<typeof ref>): NodeBgpPeer => ({
  address,
  asn: 65000,
  ...(secret ? { passwordSecretRef: secret } : {}),
});

let secrets: Map<string, Record<string, string>>;
let reads: string[];
let failing: boolean;
const reader: SecretReader = async (namespace, name) => {
  reads.push(`${namespace}/${name}`);
  if (failing) throw new Error('API server unavailable');
  return secrets.get(`${namespace}/${name}`);
};

beforeEach(() => {
  secrets = new Map();
  reads = [];
  failing = false;
});

describe('BGP peer passwords', () => {
  it('passes the session timers of the NodeConfig through to BIRD', async () => {
    const p = new PeerPasswords(reader, 'flock-system', createMemoryLogger());
    const timers = {
      holdTime: 9,
      keepaliveTime: 3,
      connectDelayTime: 1,
      connectRetryTime: 5,
      errorWaitTime: { min: 5, max: 30 },
    };
    const r = await p.resolve([{ ...peer('2001:db8:ffff::1'), ...timers }]);
    expect(r.peers).toEqual([{ address: '2001:db8:ffff::1', asn: 65000, ...timers }]);
  });

  it('reads only the Secrets named, once each, defaulting to the agent namespace', async () => {
    secrets.set('flock-system/bgp', { password: b64('s3cret\n'), other: b64('x') });
    secrets.set('net/tor', { md5: b64('tor-key') });
    const p = new PeerPasswords(reader, 'flock-system', createMemoryLogger());
    const r = await p.resolve([
      peer('2001:db8:ffff::1', ref('bgp')),
      peer('2001:db8:ffff::2', ref('bgp')),
      peer('2001:db8:ffff::3', ref('tor', { namespace: 'net', key: 'md5' })),
      peer('2001:db8:ffff::4'),
    ]);
    expect(reads).toEqual(['flock-system/bgp', 'net/tor']);
    expect(r.problems).toEqual([]);
    expect(r.peers.map((x) => [x.address, x.password])).toEqual([
      ['2001:db8:ffff::1', 's3cret'],
      ['2001:db8:ffff::2', 's3cret'],
      ['2001:db8:ffff::3', 'tor-key'],
      ['2001:db8:ffff::4', undefined],
    ]);
    expect(r.peers[0]).not.toHaveProperty('passwordSecretRef');
  });

  it('leaves out a peer whose Secret or key is missing, or whose password BIRD cannot take', async () => {
    secrets.set('flock-system/nokey', { other: b64('x') });
    secrets.set('flock-system/quote', { password: b64('has"quote') });
    const r = await new PeerPasswords(reader, 'flock-system', createMemoryLogger()).resolve([
      peer('2001:db8:ffff::1', ref('absent')),
      peer('2001:db8:ffff::2', ref('nokey')),
      peer('2001:db8:ffff::3', ref('quote')),
      peer('2001:db8:ffff::4'),
    ]);
    expect(r.peers.map((x) => x.address)).toEqual(['2001:db8:ffff::4']);
    expect(r.problems.map((x) => x.message)).toEqual([
      'password Secret flock-system/absent not found',
      'Secret flock-system/nokey has no key "password"',
      expect.stringMatching(/^password: .*double quote/),
    ]);
    expect(JSON.stringify(r.problems)).not.toContain('has"quote');
  });

  it('keeps the last password read while the Secret cannot be read, but not after it is deleted', async () => {
    secrets.set('flock-system/bgp', { password: b64('first') });
    const p = new PeerPasswords(reader, 'flock-system', createMemoryLogger());
    const peers = [peer('2001:db8:ffff::1', ref('bgp'))];
    await p.resolve(peers);
    failing = true;
    const kept = await p.resolve(peers);
    expect(kept.peers[0]?.password).toBe('first');
    expect(kept.stale).toEqual([
      {
        address: '2001:db8:ffff::1',
        asn: 65000,
        message: expect.stringMatching(
          /cannot read Secret flock-system\/bgp: .*; BIRD keeps the last password read/,
        ),
      },
    ]);
    failing = false;
    secrets.delete('flock-system/bgp');
    expect((await p.resolve(peers)).peers).toEqual([]);
    failing = true;
    const r = await p.resolve(peers);
    expect(r.peers).toEqual([]);
    expect(r.problems[0]?.message).toMatch(/cannot read Secret flock-system\/bgp/);
  });

  it('names the chart value to set when RBAC forbids the Secret (the chart grants only the Secrets it lists)', async () => {
    const forbidden: SecretReader = () =>
      Promise.reject(new KubeApiError(403, 'Forbidden', 'secrets "bgp" is forbidden'));
    const r = await new PeerPasswords(forbidden, 'flock-system', createMemoryLogger()).resolve([
      peer('2001:db8:ffff::1', ref('bgp')),
    ]);
    expect(r.peers).toEqual([]);
    expect(r.problems[0]?.message).toMatch(
      /cannot read Secret flock-system\/bgp: .*forbidden.*agent\.bgpPasswordSecrets.*no password was ever read/,
    );
  });

  it('keeps the last password read across a restart, in a 0600 file, and forgets Secrets no peer names', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'flock-passwords-'));
    try {
      const path = join(dir, 'bgp-passwords.json');
      secrets.set('flock-system/bgp', { password: b64('first') });
      secrets.set('flock-system/old', { password: b64('old') });
      const run = () =>
        new PeerPasswords(
          reader,
          'flock-system',
          createMemoryLogger(),
          passwordFile(path, createMemoryLogger()),
        );
      await run().resolve([
        peer('2001:db8:ffff::1', ref('bgp')),
        peer('2001:db8:ffff::2', ref('old')),
      ]);
      expect((await stat(path)).mode & 0o777).toBe(0o600);
      failing = true;
      // A new agent (nothing in memory) whose first read fails.
      const peers = [peer('2001:db8:ffff::1', ref('bgp'))];
      const r = await run().resolve(peers);
      expect(r.peers.map((x) => [x.address, x.password])).toEqual([['2001:db8:ffff::1', 'first']]);
      expect(r.problems).toEqual([]);
      expect(r.stale.map((x) => x.address)).toEqual(['2001:db8:ffff::1']);
      expect(Object.keys(JSON.parse(await readFile(path, 'utf8')).passwords)).toEqual([
        'flock-system/bgp/password',
      ]);
      // Never read on this node: nothing to keep, the peer is left out and reported.
      const never = await run().resolve([peer('2001:db8:ffff::3', ref('new'))]);
      expect(never.peers).toEqual([]);
      expect(never.problems[0]?.message).toMatch(/no password was ever read from it on this node/);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  it('reads Secrets from the API server by name (undefined when absent)', async () => {
    const api = new FakeApiServer();
    api.register(SECRETS, { builtin: true });
    const read = apiSecretReader(api);
    expect(await read('flock-system', 'bgp')).toBeUndefined();
    api.putObject(SECRETS, {
      apiVersion: 'v1',
      kind: 'Secret',
      metadata: { name: 'bgp', namespace: 'flock-system' },
      data: { password: b64('x') },
    } as never);
    expect(await read('flock-system', 'bgp')).toEqual({ password: b64('x') });
    expect(api.requests.map((r) => `${r.method} ${r.path}`)).toEqual([
      'GET /api/v1/namespaces/flock-system/secrets/bgp',
      'GET /api/v1/namespaces/flock-system/secrets/bgp',
    ]);
  });
});
