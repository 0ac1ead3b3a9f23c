// The operator's peer relay alone, as a process beside the fan-out bench's cluster (the
// `peer-relay` arm): one watch of every PeerSlice, served over HTTPS to the bench's watchers,
// their tokens checked by TokenReview through the bench's own credentials, as
// flock-peer-relay (the operator's peer-relay/main.ts) runs it. Loaded from the operator's
// build by path (publisher-module.ts). It listens on --host, on a port of the system's choosing,
// and says the port over IPC once its slices are synced (relay-setup.ts); run.ts measures its
// CPU as the API server's.
//   node relay.js --kubeconfig PATH --tls-cert-file PATH --tls-key-file PATH --allow-user USER
//     --host ADDR [--coalesce-ms MS]
import { readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { HttpTransport, createLogger, loadKubeConfig } from '@flock/kube';
import { loadPeerRelay } from './publisher-module.js';

/** Relay → run.ts, once: it serves every slice's records. */
export interface RelayListening {
  type: 'listening';
  port: number;
  records: number;
}

const { values } = parseArgs({
  strict: true,
  options: {
    kubeconfig: { type: 'string' },
    'tls-cert-file': { type: 'string' },
    'tls-key-file': { type: 'string' },
    'allow-user': { type: 'string' },
    host: { type: 'string' },
    'coalesce-ms': { type: 'string' },
  },
});
const { kubeconfig, 'tls-cert-file': certFile, 'tls-key-file': keyFile } = values;
const { 'allow-user': user, host, 'coalesce-ms': coalesce } = values;
if (!kubeconfig || !certFile || !keyFile || !user || !host || !process.send)
  throw new Error('relay.js is started by the fan-out benchmark (--kubeconfig, --tls-*, IPC)');

const PeerRelay = await loadPeerRelay();
// Warnings too: a failed request or review is what the bench must not miss.
const logger = createLogger('bench-relay', 'warn');
const relay = new PeerRelay({
  transport: new HttpTransport(loadKubeConfig(kubeconfig)),
  logger,
  allowedUsers: [user],
  tls: { cert: readFileSync(certFile, 'utf8'), key: readFileSync(keyFile, 'utf8') },
  ...(coalesce !== undefined ? { coalesceMs: Number(coalesce) } : {}),
  // Every watcher connects from this machine's one address.
  maxConnectionsPerSource: 100_000,
});
const port = await relay.start(0, host);
await relay.slices.synced;
process.send({ type: 'listening', port, records: relay.log.size } satisfies RelayListening);
let stopping: Promise<void> | undefined;
const shutdown = () =>
  void (stopping ??= relay.stop()).finally(() => {
    console.log(`relay: stopped (${relay.log.seq} changes logged, ${relay.log.size} records)`);
    process.exit(0);
  });
process.once('SIGTERM', shutdown);
// run.ts went away: nothing keeps this process.
process.once('disconnect', shutdown);
