#!/usr/bin/env node
// flock-peer-relay: the peer relay (relay.ts) as a process. It serves HTTPS only: peer records
// are every pod's labels and addresses, and the agents send their service account tokens.
// SIGTERM/SIGINT close every stream (the agents resume on another replica) and exit 0.
import { readFileSync } from 'node:fs';
import {
  createLogger,
  errorMessage,
  HttpTransport,
  loadKubeConfig,
  readCommandLine,
  startHealthServer,
} from '@flock/kube';
import { operatorVersion } from '../version.js';
import { RELAY_FLAGS, parseRelayOptions } from './options.js';
import { PeerRelay } from './relay.js';

async function main(): Promise<void> {
  const argv = process.argv.slice(2);
  const o = readCommandLine(RELAY_FLAGS, { argv, env: process.env, version: operatorVersion }, () =>
    parseRelayOptions(argv),
  );
  if (!o) return;
  const logger = createLogger('peer-relay', o.logLevel);
  const relay = new PeerRelay({
    transport: new HttpTransport(loadKubeConfig(o.kubeconfig)),
    logger,
    allowedUsers: o.allowUsers,
    tls: { cert: readFileSync(o.tlsCertFile, 'utf8'), key: readFileSync(o.tlsKeyFile, 'utf8') },
    maxLogEvents: o.maxLogEvents,
    watchdogMs: o.watchdog,
    coalesceMs: o.coalesce,
    maxConnectionsPerSource: o.maxConnectionsPerSource,
  });
  const port = await relay.start(o.port, o.host || undefined);
  const health =
    o.healthPort > 0
      ? await startHealthServer({
          port: o.healthPort,
          ...(o.host ? { host: o.host } : {}),
          registry: relay.registry,
          logger,
          checks: { 'peerslices-synced': () => relay.ready },
        })
      : undefined;
  logger.info('serving peer records', { port, allowedUsers: o.allowUsers });
  const shutdown = () =>
    void Promise.all([relay.stop(), health?.close()]).then(
      () => process.exit(0),
      () => process.exit(1),
    );
  process.once('SIGTERM', shutdown);
  process.once('SIGINT', shutdown);
}

main().catch((err: unknown) => {
  process.stderr.write(`flock-peer-relay: ${errorMessage(err)}\n`);
  process.exit(1);
});
