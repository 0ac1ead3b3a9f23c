// The peer relay of the fan-out bench's `peer-relay` arm, as a cluster would deploy it: a CA and
// a serving certificate for the relay's Service name (made with openssl in a temporary
// directory), the agents' namespace and ServiceAccount with a token (TokenRequest), the relay
// process (relay.ts) with TokenReview for that account, and an EndpointSlice of its Service
// pointing at it, which is how agents find relays (relay-peers.ts). The relay listens on this
// machine's first non-loopback IPv4 address, not 127.0.0.1: the API server refuses an
// EndpointSlice with a loopback address (422 "may not be in the loopback range"). The traffic
// stays on the machine all the same.
import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { readFileSync } from 'node:fs';
import { request } from 'node:https';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  ENDPOINT_SLICES,
  NAMESPACES,
  applyObject,
  objectPath,
  type KubeObject,
  type KubeTransport,
} from '@flock/kube';
import {
  eventually,
  issueCertificate,
  selfSignedCertificate,
  type ControlPlane,
} from '@flock/testkit';
import { RELAY, type RelayFiles } from './designs.js';
import type { RelayListening } from './relay.js';

const RELAY_JS = join(import.meta.dirname, 'relay.js');
const FIELD_MANAGER = 'flock-bench';
/** The relay's Service name, as agents check it against its certificate. */
export const RELAY_SERVER_NAME = `${RELAY.service}.${RELAY.namespace}.svc`;
export const RELAY_USER = `system:serviceaccount:${RELAY.namespace}:${RELAY.serviceAccount}`;

export interface RelayTls extends RelayFiles {
  dir: string;
  certFile: string;
  keyFile: string;
  /** The address the relay listens on and its EndpointSlice names. */
  host: string;
}

/**
 * What the relay's EndpointSlice says its address is: a documentation address (the API server
 * refuses loopback in an EndpointSlice). The relay listens on 127.0.0.1 and the watchers' `open`
 * connects there for it (designs.ts): no traffic leaves loopback.
 */
export const RELAY_ENDPOINT = '198.51.100.7';
const LOOPBACK = '127.0.0.1';

/** A CA and the relay's serving certificate (SAN: its Service name and 127.0.0.1). */
async function makeTls(dir: string, host: string): Promise<Omit<RelayTls, 'tokenFile'>> {
  const days = 2;
  const ca = await selfSignedCertificate(dir, 'ca', { subject: '/CN=flock-bench-relay-ca', days });
  const relay = await issueCertificate(dir, 'relay', ca, {
    subject: `/CN=${RELAY_SERVER_NAME}`,
    san: `DNS:${RELAY_SERVER_NAME},IP:${LOOPBACK}`,
    days,
  });
  return { dir, host, caFile: ca.cert, certFile: relay.cert, keyFile: relay.key };
}

/**
 * Certificates, the agents' namespace and ServiceAccount, and a token for it (the control
 * plane's TokenRequest, an hour: minted again for each design that runs a relay). Remove `dir`
 * when done.
 */
export async function relayAccess(cp: ControlPlane, api: KubeTransport): Promise<RelayTls> {
  const dir = await mkdtemp(join(tmpdir(), 'flock-bench-relay-'));
  try {
    const tls = await makeTls(dir, LOOPBACK);
    await applyObject(
      api,
      NAMESPACES,
      { metadata: { name: RELAY.namespace } },
      { fieldManager: FIELD_MANAGER },
    );
    const { token } = await cp.mintServiceAccount(RELAY.namespace, RELAY.serviceAccount);
    const tokenFile = join(dir, 'token');
    await writeFile(tokenFile, token, { mode: 0o600 });
    return { ...tls, tokenFile };
  } catch (error) {
    await rm(dir, { recursive: true, force: true });
    throw error;
  }
}

/** The relay's Service's one endpoint: `host` at `port`, ready. */
function endpointSlice(host: string, port: number): KubeObject {
  return {
    metadata: {
      name: RELAY.service,
      namespace: RELAY.namespace,
      labels: { 'kubernetes.io/service-name': RELAY.service },
    },
    addressType: 'IPv4',
    endpoints: [{ addresses: [host], conditions: { ready: true } }],
    ports: [{ name: 'https', protocol: 'TCP', port }],
  } as KubeObject;
}

/** GET /healthz over HTTPS, the certificate checked against the CA (by its IP SAN). */
function healthz(host: string, port: number, ca: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = request({ host, port, path: '/healthz', ca }, (res) => {
      res.resume();
      resolve(res.statusCode ?? 0);
    });
    req.on('error', reject);
    req.end();
  });
}

export interface RunningRelay {
  pid: number;
  port: number;
  stop(): Promise<void>;
}

/**
 * Start the relay (relay.ts), wait until it serves every slice (its IPC word, then /healthz 200
 * through its certificate), and publish its EndpointSlice; `stop` removes the slice and stops it.
 */
export async function startRelay(
  kubeconfig: string,
  api: KubeTransport,
  tls: RelayTls,
  coalesceMs?: number,
): Promise<RunningRelay> {
  const t0 = Date.now();
  const child: ChildProcess = spawn(
    process.execPath,
    [
      RELAY_JS,
      '--kubeconfig',
      kubeconfig,
      '--tls-cert-file',
      tls.certFile,
      '--tls-key-file',
      tls.keyFile,
      '--allow-user',
      RELAY_USER,
      '--host',
      tls.host,
      ...(coalesceMs !== undefined ? ['--coalesce-ms', String(coalesceMs)] : []),
    ],
    { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] },
  );
  const exited = once(child, 'exit');
  const stopChild = async () => {
    if (child.exitCode !== null || child.signalCode !== null) return;
    child.kill('SIGTERM');
    await exited;
  };
  try {
    const [word] = (await Promise.race([
      once(child, 'message'),
      exited.then(([code]) => {
        throw new Error(`the relay exited (${String(code)}) before it served`);
      }),
    ])) as [RelayListening];
    const ca = readFileSync(tls.caFile, 'utf8');
    await eventually('the relay answers /healthz 200', async () => {
      const status = await healthz(tls.host, word.port, ca);
      if (status !== 200) throw new Error(`/healthz ${status}`);
      return true;
    });
    await applyObject(api, ENDPOINT_SLICES, endpointSlice(RELAY_ENDPOINT, word.port), {
      fieldManager: FIELD_MANAGER,
    });
    console.log(
      `relay: ${word.records} records, serving on ${tls.host}:${word.port} (endpoint ${RELAY_ENDPOINT}) after ` +
        `${((Date.now() - t0) / 1000).toFixed(1)} s`,
    );
    return {
      pid: child.pid as number,
      port: word.port,
      async stop() {
        await api
          .request({
            method: 'DELETE',
            path: objectPath(ENDPOINT_SLICES, RELAY.service, RELAY.namespace),
          })
          .catch(() => undefined);
        await stopChild();
      },
    };
  } catch (error) {
    await stopChild();
    throw error;
  }
}
