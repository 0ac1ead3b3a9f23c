#!/usr/bin/env node
// flock-operator: flags and environment in, the operator running until SIGTERM/SIGINT, then a
// graceful stop (stop leading and release the Lease, finish running reconciles, stop
// watching) and exit 0. A stop that hangs is cut off after 30 s with exit 1.
import { randomUUID } from 'node:crypto';
import {
  createLogger,
  errorMessage,
  HttpTransport,
  loadKubeConfig,
  readCommandLine,
} from '@flock/kube';
import { OPERATOR_FLAGS, parseOptions } from './options.js';
import { startOperator } from './operator.js';
import { operatorVersion } from './version.js';

const STOP_TIMEOUT_MS = 30_000;

async function main(): Promise<void> {
  const argv = process.argv.slice(2);
  const options = readCommandLine(
    OPERATOR_FLAGS,
    { argv, env: process.env, version: operatorVersion },
    () => parseOptions(argv),
  );
  if (!options) return;
  const log = createLogger('operator', options.logLevel);
  const transport = new HttpTransport(loadKubeConfig(options.kubeconfig));
  const operator = await startOperator({
    transport,
    logger: log,
    // Two replicas must never share an identity, even with the same pod name.
    identity: `${options.identity}_${randomUUID().slice(0, 8)}`,
    namespace: options.namespace,
    leaderElect: options.leaderElect,
    leaseName: options.leaseName,
    leaseDurationMs: options.leaseDuration,
    renewDeadlineMs: options.renewDeadline,
    retryPeriodMs: options.retryPeriod,
    ...(options.healthPort > 0
      ? { healthPort: options.healthPort, healthHost: options.healthHost }
      : {}),
    quarantineMs: options.prefixQuarantine,
    concurrency: options.concurrency,
    workers: options.workers,
    watchdogMs: options.watchdog,
    claimGcPeriodMs: options.claimGcPeriod,
    claimGraceMs: options.claimGrace,
    serveUnsetLbClass: options.serveUnsetLbClass,
    serviceQuarantineMs: options.serviceAddressQuarantine,
    peerSlices: options.peerSlices,
    peerSliceBatchMs: options.peerSliceBatch,
    ...(options.peerRelayDeployment
      ? {
          peerRelayScale: {
            deployment: options.peerRelayDeployment,
            nodesPerReplica: options.peerRelayNodesPerReplica,
            minReplicas: options.peerRelayMinReplicas,
            maxReplicas: options.peerRelayMaxReplicas,
          },
        }
      : {}),
  });
  let stopping = false;
  const shutdown = (signal: string) => {
    if (stopping) return;
    stopping = true;
    log.info('shutting down', { signal });
    const timer = setTimeout(() => {
      log.error('graceful stop timed out', { timeoutMs: STOP_TIMEOUT_MS });
      process.exit(1);
    }, STOP_TIMEOUT_MS);
    timer.unref();
    operator.stop().then(
      () => {
        clearTimeout(timer);
        process.exit(0);
      },
      (err: unknown) => {
        log.error('stop failed', { err: errorMessage(err) });
        process.exit(1);
      },
    );
  };
  process.once('SIGTERM', () => shutdown('SIGTERM'));
  process.once('SIGINT', () => shutdown('SIGINT'));
}

main().catch((err: unknown) => {
  process.stderr.write(`flock-operator: ${errorMessage(err)}\n`);
  process.exit(1);
});
