// Command-line flags of flock-peer-relay (@flock/kube's FlagSet: FLOCK_<FLAG>, --help).
import { RELAY_PORT } from '@flock/api';
import {
  FlagSet,
  UsageError,
  durationFlag,
  intFlag,
  kubeconfigFlag,
  logLevelFlag,
  pathFlag,
} from '@flock/kube';
import { z } from 'zod';
import { RELAY_COALESCE_MS, RELAY_CONNECTIONS_PER_SOURCE } from './server.js';

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
  healthPort: {
    help: '/healthz, /readyz and /metrics over HTTP (0: off)',
    arg: 'PORT',
    schema: intFlag(0, 65535),
    default: '9903',
  },
  maxLogEvents: {
    help: 'record changes kept for agents that reconnect',
    arg: 'N',
    schema: intFlag(1_000, 10_000_000),
    default: '100000',
  },
  coalesce: {
    help: "gather an agent's live changes this long into one write (0: each at once)",
    arg: 'DURATION',
    schema: durationFlag(0).pipe(z.number().max(1_000, 'at most 1s')),
    default: `${RELAY_COALESCE_MS}ms`,
  },
  maxConnectionsPerSource: {
    help: 'connections open at once from one address (an agent holds one)',
    arg: 'N',
    schema: intFlag(1, 100_000),
    default: String(RELAY_CONNECTIONS_PER_SOURCE),
  },
  watchdog: {
    help: 'restart a watch silent for this long',
    arg: 'DURATION',
    schema: durationFlag(1_000),
    default: '5m',
  },
  logLevel: logLevelFlag,
});

/** The relay's settings; the certificate, its key and the readers are required. */
export function parseRelayOptions(argv: readonly string[], env: NodeJS.ProcessEnv = process.env) {
  const o = RELAY_FLAGS.parse(argv, env);
  const { tlsCertFile, tlsKeyFile, allowUsers } = o;
  if (!tlsCertFile || !tlsKeyFile || !allowUsers)
    throw new UsageError('--tls-cert-file, --tls-key-file and --allow-users are required');
  return { ...o, tlsCertFile, tlsKeyFile, allowUsers };
}
