#!/usr/bin/env node
// flock-peer-relay: the peer relay (relay.ts) as a process. It serves HTTPS only: peer records
// are every pod's labels and addresses, and the agents send their service account tokens.
// SIGTERM/SIGINT close every stream (the agents resume on another replica) and exit 0.
import { readFileSync } from 'node:fs';
import {
  FlagSet,
  createLogger,
  durationFlag,
  errorMessage,
  HttpTransport,
  intFlag,
  kubeconfigFlag,
  loadKubeConfig,
  logLevelFlag,
  pathFlag,
  readCommandLine,
} from '@flock/kube';
import { RELAY_PORT } from '@flock/api';
import { z } from 'zod';
import { operatorVersion } from '../version.js';
import { PeerRelay } from './relay.js';

export const RELAY_FLAGS = new FlagSet('flock-peer-relay', {
  kubeconfig: kubeconfigFlag,
  port: { help: 'HTTPS port', arg: 'PORT', schema: intFlag(1, 65535), default: String(RELAY_PORT) },
  host: {
    help: 'address to listen on (default: all, IPv6 and IPv4)',
    arg: 'ADDR',
    schema: z.string(),
    default: '',
  },
  tlsCertFile: { help: 'serving certificate (PEM)', arg: 'PATH', schema: pathFlag() },
  tlsKeyFile: { help: "the certificate's key (PEM)", arg: 'PATH', schema: pathFlag() },
  allowUsers: {
    help: 'comma-separated users (TokenReview usernames) that may read, e.g. system:serviceaccount:flock-system:flock-agent',
    arg: 'USERS',
    schema: z
      .string()
      .transform((s) => s.split(',').filter(Boolean))
      .pipe(z.array(z.string().min(1).max(256)).min(1, 'name at least one user')),
  },
  maxLogEvents: {
    help: 'record changes kept for agents that reconnect',
    arg: 'N',
    schema: intFlag(1_000, 10_000_000),
    default: '100000',
  },
  watchdog: {
    help: 'restart a watch silent for this long',
    arg: 'DURATION',
    schema: durationFlag(1_000),
    default: '5m',
  },
  logLevel: logLevelFlag,
});

async function main(): Promise<void> {
  const argv = process.argv.slice(2);
  const o = readCommandLine(RELAY_FLAGS, { argv, env: process.env, version: operatorVersion });
  if (!o) return;
  if (!o.tlsCertFile || !o.tlsKeyFile || !o.allowUsers)
    throw new Error('--tls-cert-file, --tls-key-file and --allow-users are required');
  const logger = createLogger('peer-relay', o.logLevel);
  const relay = new PeerRelay({
    transport: new HttpTransport(loadKubeConfig(o.kubeconfig)),
    logger,
    allowedUsers: o.allowUsers,
    tls: { cert: readFileSync(o.tlsCertFile, 'utf8'), key: readFileSync(o.tlsKeyFile, 'utf8') },
    maxLogEvents: o.maxLogEvents,
    watchdogMs: o.watchdog,
  });
  const port = await relay.start(o.port, o.host || undefined);
  logger.info('serving peer records', { port, allowedUsers: o.allowUsers });
  const shutdown = () =>
    void relay.stop().then(
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
