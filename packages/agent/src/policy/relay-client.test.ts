// The agent's HTTPS connection to a peer relay (httpsRelay) against a local TLS server with a
// certificate made by openssl: the certificate checked for the relay's Service name, the token
// sent, a deflated stream inflated; a certificate for another name, or another CA, refused.
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer, type Server } from 'node:https';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { deflateSync } from 'node:zlib';
import { selfSignedCertificate } from '@flock/testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { httpsRelay, RelayStream, type RelaySink } from './relay-client.js';

const NAME = 'flock-peer-relay.flock-system.svc';
let dir: string;
let server: Server;
let port: number;
const seen: { auth?: string; encoding?: string }[] = [];

const read = (f: string) => readFileSync(join(dir, f), 'utf8');

const STREAM =
  '{"t":"begin","epoch":"0123abcd-0000","full":true,"seq":2}\n' +
  '{"t":"put","ns":"a","pod":{"name":"web","uid":"u1","node":"n2","ips":["2001:db8::1"]}}\n' +
  '{"t":"synced","seq":2}\n';

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'flock-relay-tls-'));
  await selfSignedCertificate(dir, 'relay', { subject: '/CN=relay', san: `DNS:${NAME}` });
  await selfSignedCertificate(dir, 'other', { subject: '/CN=other', san: 'DNS:other.example' });
  server = createServer({ key: read('relay.key'), cert: read('relay.crt') }, (req, res) => {
    seen.push({
      ...(req.headers.authorization ? { auth: req.headers.authorization } : {}),
      ...(req.headers['accept-encoding'] ? { encoding: req.headers['accept-encoding'] } : {}),
    });
    res.writeHead(200, { 'content-encoding': 'deflate' });
    res.end(deflateSync(STREAM));
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  port = (server.address() as AddressInfo).port;
});
afterAll(async () => {
  server?.closeAllConnections();
  await new Promise((r) => server?.close(r));
  rmSync(dir, { recursive: true, force: true });
});

function sink() {
  const events: string[] = [];
  const s: RelaySink = {
    begin: (full) => events.push(`begin ${full}`),
    put: (ns, p) => events.push(`put ${ns}/${p.name}`),
    del: (ns, name) => events.push(`del ${ns}/${name}`),
    synced: () => events.push('synced'),
  };
  return { s, events };
}

describe('httpsRelay', () => {
  it('checks the certificate for the Service name, sends the token, inflates the stream', async () => {
    const { s, events } = sink();
    const open = httpsRelay({ host: '127.0.0.1', port, serverName: NAME, ca: read('relay.crt') });
    await new RelayStream(s).run(open, 'agent-token', new AbortController().signal);
    expect(events).toEqual(['begin true', 'put a/web', 'synced']);
    expect(seen.at(-1)).toEqual({ auth: 'Bearer agent-token', encoding: 'deflate' });
  });

  it('refuses a relay whose certificate is for another name or from another CA', async () => {
    const stream = new RelayStream(sink().s);
    const signal = new AbortController().signal;
    const wrongName = httpsRelay({
      host: '127.0.0.1',
      port,
      serverName: 'evil.flock-system.svc',
      ca: read('relay.crt'),
    });
    await expect(stream.run(wrongName, 't', signal)).rejects.toThrow(/altnames|Hostname/);
    const wrongCa = httpsRelay({
      host: '127.0.0.1',
      port,
      serverName: NAME,
      ca: read('other.crt'),
    });
    await expect(stream.run(wrongCa, 't', signal)).rejects.toThrow(/certificate/);
  });
});
