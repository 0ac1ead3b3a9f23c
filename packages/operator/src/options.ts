// Command-line flags and environment of flock-operator: one flag table (@flock/kube's FlagSet)
// gives the flags, their FLOCK_<FLAG> environment variables, defaults, validation and --help.
// The pod's own name and namespace come from the downward API (POD_NAME, POD_NAMESPACE) or the
// service account.
import { existsSync, readFileSync } from 'node:fs';
import { hostname } from 'node:os';
import { DnsLabel, DnsSubdomain, LOAD_BALANCER_CLASS } from '@flock/api';
import { DEFAULT_PREFIX_QUARANTINE_MS } from '@flock/ipam';
import {
  FlagSet,
  UsageError,
  boolFlag,
  durationFlag,
  formatDuration,
  intFlag,
  kubeconfigFlag,
  logLevelFlag,
  type FlagValues,
} from '@flock/kube';
import { z } from 'zod';
import { DEFAULT_CLAIM_GC_PERIOD_MS, DEFAULT_CLAIM_GRACE_MS } from './claim-gc.js';
import { DEFAULT_SERVICE_QUARANTINE_MS } from './service-claims.js';
import { DEFAULT_LEASE_NAME, DEFAULT_NAMESPACE } from './names.js';
import { DEFAULT_PEER_BATCH_MS } from './peer-slices/publisher.js';

const FLAGS = {
  kubeconfig: kubeconfigFlag,
  namespace: {
    help: `namespace of the leader election Lease (default: the service account's, else ${DEFAULT_NAMESPACE})`,
    arg: 'NS',
    schema: DnsLabel,
    env: ['POD_NAMESPACE'],
  },
  leaderElect: {
    help: 'elect a leader through a Lease',
    schema: boolFlag(),
    default: 'true',
    switch: true,
  },
  leaseName: { help: 'Lease name', arg: 'NAME', schema: DnsSubdomain, default: DEFAULT_LEASE_NAME },
  identity: {
    help: 'this replica in the Lease (default: the host name; a random suffix is added)',
    arg: 'ID',
    schema: z.string().min(1).max(100),
    env: ['POD_NAME'],
  },
  leaseDuration: {
    help: 'how long a Lease holds',
    arg: 'DURATION',
    schema: durationFlag(1_000),
    default: '15s',
  },
  renewDeadline: {
    help: 'the leader gives up leading when it could not renew for this long',
    arg: 'DURATION',
    schema: durationFlag(1_000),
    default: '10s',
  },
  retryPeriod: {
    help: 'how often candidates try the Lease',
    arg: 'DURATION',
    schema: durationFlag(100),
    default: '2s',
  },
  healthPort: {
    help: '/healthz, /readyz and /metrics (0: off)',
    arg: 'PORT',
    schema: intFlag(0, 65535),
    default: '8080',
  },
  healthHost: {
    // Empty: every address of both families (see @flock/kube's health server).
    help: 'address to serve them on (default: all, IPv6 and IPv4)',
    arg: 'ADDR',
    schema: z.string(),
    default: '',
  },
  logLevel: logLevelFlag,
  prefixQuarantine: {
    help: 'how long a freed node prefix is held back',
    arg: 'DURATION',
    schema: durationFlag(),
    default: formatDuration(DEFAULT_PREFIX_QUARANTINE_MS),
  },
  concurrency: {
    help: 'API writes in flight at most',
    arg: 'N',
    schema: intFlag(1, 256),
    default: '16',
  },
  workers: { help: 'pools reconciled in parallel', arg: 'N', schema: intFlag(1, 16), default: '2' },
  watchdog: {
    help: 'restart a watch silent for this long',
    arg: 'DURATION',
    schema: durationFlag(1_000),
    default: '5m',
  },
  claimGcPeriod: {
    help: 'how often AddressClaims whose pods or nodes are gone are looked for',
    arg: 'DURATION',
    schema: durationFlag(1_000),
    default: formatDuration(DEFAULT_CLAIM_GC_PERIOD_MS),
  },
  claimGrace: {
    help: 'how long an AddressClaim may have no holder before it is deleted',
    arg: 'DURATION',
    schema: durationFlag(1_000),
    default: formatDuration(DEFAULT_CLAIM_GRACE_MS),
  },
  serveUnsetLbClass: {
    help: `give addresses to LoadBalancer Services without a loadBalancerClass too (not only to ${LOAD_BALANCER_CLASS})`,
    schema: boolFlag(),
    default: 'true',
    switch: true,
  },
  serviceAddressQuarantine: {
    help: 'how long a Service address let go is held back from other owners',
    arg: 'DURATION',
    schema: durationFlag(),
    default: formatDuration(DEFAULT_SERVICE_QUARANTINE_MS),
  },
  peerSlices: {
    help: "publish PeerSlices (every pod's policy peer record) and NodePeers (every Node's labels and addresses) for the agents' --policy-peers=peer-slices",
    schema: boolFlag(),
    default: 'true',
    switch: true,
  },
  peerSliceBatch: {
    help: 'how long pod changes of one namespace are gathered before its PeerSlices are written',
    arg: 'DURATION',
    schema: durationFlag(0),
    default: formatDuration(DEFAULT_PEER_BATCH_MS),
  },
  peerRelayDeployment: {
    help: "scale this Deployment (the peer relay, in --namespace) by node count while leading; empty: don't",
    arg: 'NAME',
    schema: z.union([z.literal(''), DnsSubdomain]),
    default: '',
  },
  peerRelayNodesPerReplica: {
    help: 'one peer relay replica for this many nodes',
    arg: 'N',
    schema: intFlag(1, 100_000),
    default: '200',
  },
  peerRelayMinReplicas: {
    help: 'peer relay replicas at least (never more than there are nodes)',
    arg: 'N',
    schema: intFlag(0, 1_000),
    default: '2',
  },
  peerRelayMaxReplicas: {
    help: 'peer relay replicas at most (a fixed count: the same as --peer-relay-min-replicas)',
    arg: 'N',
    schema: intFlag(0, 1_000),
    default: '20',
  },
} as const;

export const OPERATOR_FLAGS = new FlagSet('flock-operator', FLAGS);
type CliOptions = FlagValues<typeof FLAGS>;

const SA_NAMESPACE = '/var/run/secrets/kubernetes.io/serviceaccount/namespace';

/** Parse argv (without node and script) and the environment; throws UsageError with every problem. */
export function parseOptions(
  argv: readonly string[],
  env: NodeJS.ProcessEnv = process.env,
  saNamespaceFile = SA_NAMESPACE,
): CliOptions {
  const saNamespace = existsSync(saNamespaceFile)
    ? readFileSync(saNamespaceFile, 'utf8').trim()
    : '';
  const o = OPERATOR_FLAGS.parse(argv, env, {
    namespace: saNamespace || DEFAULT_NAMESPACE,
    identity: hostname(),
  });
  if (o.peerRelayMinReplicas > o.peerRelayMaxReplicas)
    throw new UsageError('need --peer-relay-min-replicas ≤ --peer-relay-max-replicas');
  if (!(o.leaseDuration > o.renewDeadline && o.renewDeadline > o.retryPeriod * 1.2)) {
    throw new UsageError('need --lease-duration > --renew-deadline > 1.2 × --retry-period');
  }
  return o;
}
