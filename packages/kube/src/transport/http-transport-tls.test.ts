// The transport's TLS against a local node:https server with its own CA (made with openssl for
// this test): the CA from a file or inline, tls-server-name, insecure-skip-tls-verify, client
// certificate authentication (files and inline), a certificate from an exec plugin, and
// certificate files read again when the pool is rebuilt.
import { chmodSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:https';
import type { AddressInfo } from 'node:net';
import type { TLSSocket } from 'node:tls';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { issueCertificate, selfSignedCertificate } from '@flock/testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { KubeCredentials } from './credentials.js';
import { HttpTransport } from './http-transport.js';

let dir: string;
let server: Server;
let url: string;
const f = (name: string) => join(dir, name);
const read = (name: string) => readFileSync(f(name), 'utf8');

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'flock-tls-'));
  const ca = await selfSignedCertificate(dir, 'ca', { subject: '/CN=flock-test-ca' });
  // The server's certificate names only api.internal, not 127.0.0.1: tls-server-name matters.
  await issueCertificate(dir, 'server', ca, { subject: '/CN=apiserver', san: 'DNS:api.internal' });
  await issueCertificate(dir, 'alice', ca, { subject: '/O=developers/CN=alice' });
  await issueCertificate(dir, 'bob', ca, { subject: '/CN=bob' });
  server = createServer(
    {
      key: read('server.key'),
      cert: read('server.crt'),
      ca: read('ca.crt'),
      requestCert: true,
      rejectUnauthorized: false,
    },
    (req, res) => {
      const peer = (req.socket as TLSSocket).getPeerCertificate();
      const authorized = (req.socket as TLSSocket).authorized;
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(
        JSON.stringify({
          user: authorized ? peer.subject?.CN : null,
          auth: req.headers.authorization ?? null,
        }),
      );
    },
  );
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  url = `https://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(async () => {
  server?.closeAllConnections();
  await new Promise((r) => server?.close(r));
  rmSync(dir, { recursive: true, force: true });
});

const whoami = (c: Omit<KubeCredentials, 'server'>) =>
  new HttpTransport({ server: url, ...c }).request({ method: 'GET', path: '/whoami' });

describe('HttpTransport over TLS', () => {
  it('verifies the server against the CA and tls-server-name', async () => {
    await expect(
      whoami({ ca: { file: f('ca.crt') }, tlsServerName: 'api.internal' }),
    ).resolves.toEqual({
      user: null,
      auth: null,
    });
    await expect(whoami({ ca: { file: f('ca.crt') } })).rejects.toThrow(
      /IP: 127.0.0.1 is not in the cert's list/,
    );
    await expect(whoami({ tlsServerName: 'api.internal' })).rejects.toThrow(
      /self-signed|unable to (get|verify)/i,
    );
    await expect(whoami({ insecureSkipTlsVerify: true, token: 't' })).resolves.toEqual({
      user: null,
      auth: 'Bearer t',
    });
  });

  it('authenticates with a client certificate from files or inline data', async () => {
    const tls = { ca: { pem: read('ca.crt') }, tlsServerName: 'api.internal' };
    await expect(
      whoami({ ...tls, clientCert: { file: f('alice.crt') }, clientKey: { file: f('alice.key') } }),
    ).resolves.toEqual({ user: 'alice', auth: null });
    await expect(
      whoami({ ...tls, clientCert: { pem: read('bob.crt') }, clientKey: { pem: read('bob.key') } }),
    ).resolves.toEqual({ user: 'bob', auth: null });
  });

  it('presents a certificate handed out by an exec plugin', async () => {
    const plugin = f('plugin.mjs');
    const status = { clientCertificateData: read('alice.crt'), clientKeyData: read('alice.key') };
    const answer = {
      apiVersion: 'client.authentication.k8s.io/v1',
      kind: 'ExecCredential',
      status,
    };
    writeFileSync(
      plugin,
      `#!/usr/bin/env node\nprocess.stdout.write(${JSON.stringify(JSON.stringify(answer))});\n`,
    );
    chmodSync(plugin, 0o755);
    await expect(
      whoami({
        ca: { file: f('ca.crt') },
        tlsServerName: 'api.internal',
        exec: { apiVersion: 'client.authentication.k8s.io/v1', command: plugin },
      }),
    ).resolves.toEqual({ user: 'alice', auth: null });
  });

  it('reads rotated certificate files when it builds a new pool', async () => {
    writeFileSync(f('current.crt'), read('alice.crt'));
    writeFileSync(f('current.key'), read('alice.key'));
    const t = new HttpTransport(
      {
        server: url,
        ca: { file: f('ca.crt') },
        tlsServerName: 'api.internal',
        clientCert: { file: f('current.crt') },
        clientKey: { file: f('current.key') },
      },
      { reuseConnections: false }, // a new pool per request, as every 5 minutes with reuse
    );
    await expect(t.request({ method: 'GET', path: '/' })).resolves.toMatchObject({ user: 'alice' });
    writeFileSync(f('current.crt'), read('bob.crt'));
    writeFileSync(f('current.key'), read('bob.key'));
    await expect(t.request({ method: 'GET', path: '/' })).resolves.toMatchObject({ user: 'bob' });
  });
});
