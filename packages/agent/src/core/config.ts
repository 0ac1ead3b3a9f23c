// The agent's settings: one flag table (@flock/kube's FlagSet) gives the flags, their
// FLOCK_<FLAG> environment variables, the defaults, the validation and --help.
import {
  DEFAULT_AGENT_SOCKET,
  NODE_DAEMON_PORTS,
  cidrString,
  ipString,
  reservedHostPortsFlag,
  reservedPort,
  type ReservedHostPorts,
} from '@flock/api';
import {
  FlagSet,
  durationFlag,
  intFlag,
  kubeconfigFlag,
  logLevelFlag,
  pathFlag,
  UsageError,
  type FlagValues,
} from '@flock/kube';
import { z } from 'zod';

const FLAGS = {
  nodeName: {
    help: "this node's name (its Node object and NodeConfig); required",
    arg: 'NAME',
    schema: z.string().min(1).max(253),
    env: ['NODE_NAME'],
  },
  kubeconfig: kubeconfigFlag,
  socketPath: {
    flag: 'socket',
    help: "the CNI plugin's socket",
    arg: 'PATH',
    schema: pathFlag(),
    default: DEFAULT_AGENT_SOCKET,
  },
  statusSocketPath: {
    flag: 'status-socket',
    help: '`flock-agent status` asks the agent here (root-only; default: status.sock beside --socket)',
    arg: 'PATH',
    schema: pathFlag().optional(),
  },
  storePath: {
    flag: 'store',
    help: 'the allocation store file',
    arg: 'PATH',
    schema: pathFlag(),
    default: '/var/lib/flock/allocations.json',
  },
  storeLockWaitMs: {
    flag: 'store-lock-wait',
    help: 'how long to wait at start while another agent on this node holds the allocation store (the previous pod of a roll) before giving up (exit 1)',
    arg: 'DURATION',
    schema: durationFlag(),
    default: '60s',
  },
  nodeConfigTimeoutMs: {
    flag: 'node-config-timeout',
    help: "how long to wait for this node's NodeConfig before giving up (exit 1)",
    arg: 'DURATION',
    schema: durationFlag(),
    default: '10m',
  },
  addressQuarantineMs: {
    flag: 'address-quarantine',
    help: 'released addresses wait this long before reuse',
    arg: 'DURATION',
    schema: durationFlag(),
    default: '5m',
  },
  addressQuarantineShare: {
    flag: 'address-quarantine-share',
    help: "the share of a node's prefix one namespace may keep quarantined; past it, that namespace's oldest quarantine ends early (1: no bound)",
    arg: 'FRACTION',
    schema: z
      .union([z.number(), z.string().regex(/^(0?\.\d+|1(\.0*)?)$/, 'a fraction in (0, 1]')])
      .transform(Number)
      .pipe(z.number().gt(0).lte(1)),
    default: '0.25',
  },
  maxHostRoutes: {
    flag: 'max-host-routes',
    help: "at most this many host routes (pinned, anycast and Service addresses) announced from this node; keep it below the routers' import limit (past it a router drops routes or the whole session)",
    arg: 'N',
    schema: intFlag(1, 1_000_000),
    default: '1000',
  },
  resyncMs: {
    flag: 'resync',
    help: 'how often the blackholes and the Node condition are asserted again',
    arg: 'DURATION',
    schema: durationFlag(),
    default: '30s',
  },
  /**
   * Restart a watch that delivered nothing, not even a bookmark (a quiet watch gets one every
   * one to two minutes), for this long: a silent watch hides pod deletions and NodeConfig changes.
   */
  watchdogMs: {
    flag: 'watchdog',
    help: 'restart a watch silent for this long',
    arg: 'DURATION',
    schema: durationFlag(1000),
    default: '3m',
  },
  logDeniedPerSecond: {
    flag: 'log-denied',
    help: 'log packets NetworkPolicy drops to the kernel log, at most N per second per pod and direction (0: off)',
    arg: 'N',
    schema: intFlag(0, 10_000),
    default: '0',
  },
  /**
   * Pods of nodes with a NodeConfig are peers only by addresses in their node's ranges (see
   * policy/peer-addresses.ts); pods of any other node (another CNI's) only by these.
   */
  peerPodRanges: {
    help: "CIDRs (comma-separated) where pods of nodes flock does not run have their addresses; NetworkPolicy ignores such pods' other addresses (default: none)",
    arg: 'CIDRS',
    schema: z
      .union([z.array(z.string()), z.string()])
      .transform((v) =>
        typeof v === 'string'
          ? v
              .split(',')
              .map((s) => s.trim())
              .filter(Boolean)
          : v,
      )
      .pipe(z.array(cidrString('each of --peer-pod-ranges')).max(64)),
    default: '',
  },
  /**
   * Where NetworkPolicy peers on other nodes come from: the PeerSlices the operator publishes
   * (each pod's record, once for every agent), or a watch of every Pod (each change of any pod,
   * whole, to every node: docs/architecture.md).
   */
  policyPeers: {
    help: "where NetworkPolicy peers on other nodes come from: 'peer-slices' (published by the operator) or 'pods' (a watch of every Pod)",
    arg: 'SOURCE',
    schema: z.enum(['peer-slices', 'pods']),
    default: 'peer-slices',
  },
  peerRelay: {
    help: 'read the peer records of --policy-peers=peer-slices from the peer relay Service NAMESPACE/NAME (its ready endpoints; the PeerSlices directly while none answers); empty: off',
    arg: 'NAMESPACE/NAME',
    schema: z
      .string()
      .regex(
        /^([a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?\/[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?)?$/,
        'NAMESPACE/NAME',
      )
      .transform((s) => {
        const [namespace, service] = s.split('/');
        return namespace && service ? { namespace, service } : undefined;
      }),
    default: '',
  },
  peerRelayCaFile: {
    help: "the CA of the peer relay's serving certificate (PEM)",
    arg: 'PATH',
    schema: pathFlag(),
    default: '/etc/flock/peer-relay/ca.crt',
  },
  peerRelayTokenFile: {
    help: 'the token the agent shows the peer relay (its service account token)',
    arg: 'PATH',
    schema: pathFlag(),
    default: '/var/run/secrets/kubernetes.io/serviceaccount/token',
  },
  healthPort: {
    help: '/healthz, /readyz and /metrics (0: off)',
    arg: 'PORT',
    schema: intFlag(0, 65535),
    default: '9901',
  },
  healthHost: {
    help: 'address to serve them on (default: every address of both families)',
    arg: 'ADDR',
    schema: z.string().min(1).optional(),
  },
  /**
   * Ports no hostPort may take, beside those reserved always (BGP, BFD, the kubelet's, the
   * --health-port: reservedHostPorts below): the node's own services, e.g. sshd.
   */
  reservedHostPorts: {
    help: "further ports no hostPort may take, comma-separated PORT/PROTOCOL or FIRST-LAST/PROTOCOL (e.g. 22/tcp,9100/tcp); BGP, BFD, the kubelet's and --health-port are always reserved",
    arg: 'PORTS',
    schema: reservedHostPortsFlag('a service of the node (--reserved-host-ports)'),
    default: '',
  },
  logLevel: logLevelFlag,
  /**
   * Run ip, nft and birdc from a small child process ("server") or from the agent itself
   * ("direct"): forking the agent costs ten times more (see @flock/exec).
   */
  spawn: {
    help: 'run ip, nft and birdc from a spawn server child (server) or the agent (direct)',
    arg: 'MODE',
    schema: z.enum(['server', 'direct']),
    default: 'server',
  },
  /**
   * The node's network namespace when the agent does not run inside it (the lab and the kernel
   * tests run the agent on the machine's loopback, next to the API server, and wire pods in a
   * node namespace). Production leaves it unset: the agent runs in the host namespace.
   */
  hostNetns: {
    help: "the node's network namespace when the agent runs outside it (tests and the lab)",
    arg: 'PATH',
    schema: pathFlag().optional(),
  },
  nat64Dir: {
    flag: 'nat64-dir',
    help: "the Tayga translators (a Pool's nat64, a Private pool's IPv4 between nodes): where their configurations, pid files and NAT64's address map live",
    arg: 'PATH',
    schema: pathFlag(),
    default: '/var/lib/flock/nat64',
  },
  tayga: {
    help: 'NAT64 and private IPv4 between nodes: the Tayga program (Debian package tayga)',
    arg: 'PATH',
    schema: pathFlag(),
    default: '/usr/sbin/tayga',
  },
  procSys: {
    flag: 'proc-sys',
    help: "where the node's sysctl tree is writable (the chart mounts the host's /proc/sys/net at /host/proc/sys/net: a container's /proc/sys is read-only)",
    arg: 'PATH',
    schema: pathFlag(),
    default: '/proc/sys',
  },
  /** Test-only fault injection ("point[#n][,...]": SIGKILL there, see faults.ts). */
  testFaults: {
    help: 'TEST ONLY: SIGKILL at these fault points (POINT[#n],...)',
    arg: 'POINTS',
    schema: z.string().optional(),
  },
  /**
   * bird.conf, written by the agent (0600) and read by BIRD. On tmpfs so that a rebooted node's
   * BIRD never starts from the announcements of a previous boot; the directory must exist (the
   * chart mounts it into both containers).
   */
  birdConfigPath: {
    flag: 'bird-config',
    help: 'bird.conf, written by the agent and read by BIRD',
    arg: 'PATH',
    schema: pathFlag(),
    default: '/run/flock/bird/bird.conf',
  },
  birdSocketPath: {
    flag: 'bird-socket',
    help: "BIRD's control socket (bird -s)",
    arg: 'PATH',
    schema: pathFlag(),
    default: '/run/bird/bird.ctl',
  },
  /**
   * The BFD speaker: a second BIRD beside the BGP one that runs only BFD (the chart's bfd
   * DaemonSet). With both set, the peers' BFD sessions go there and the BGP BIRD runs none, so
   * that restarting the BGP BIRD (an agent upgrade) leaves BFD up and the routers bridge the
   * BGP session by graceful restart; without, the BGP BIRD runs BFD itself and its restart
   * takes the sessions down at the routers.
   */
  bfdConfigPath: {
    flag: 'bfd-config',
    help: "the BFD speaker's config, written by the agent (with --bfd-socket)",
    arg: 'PATH',
    schema: pathFlag().optional(),
  },
  bfdSocketPath: {
    flag: 'bfd-socket',
    help: "the BFD speaker BIRD's control socket (with --bfd-config)",
    arg: 'PATH',
    schema: pathFlag().optional(),
  },
  routerId: {
    help: "this node's BGP router ID, over NodeConfig spec.bgp.routerID and the Node's address",
    arg: 'IPV4',
    schema: ipString('the router ID', 4).optional(),
  },
  orphanGraceMs: {
    flag: 'orphan-grace',
    help: 'the orphan sweep leaves allocations younger than this alone',
    arg: 'DURATION',
    schema: durationFlag(),
    default: '10s',
  },
  sweepPeriodMs: {
    flag: 'sweep-period',
    help: 'how often the orphan sweep runs (besides pod deletions) and Secrets are read again',
    arg: 'DURATION',
    schema: durationFlag(),
    default: '30s',
  },
  anycastPeriodMs: {
    flag: 'anycast-period',
    help: 'how often anycast routes and announcements are checked again (besides events)',
    arg: 'DURATION',
    schema: durationFlag(),
    default: '2s',
  },
  bgpStatusPeriodMs: {
    flag: 'bgp-status-period',
    help: 'how often BIRD is asked for its BGP sessions (NodeConfig status)',
    arg: 'DURATION',
    schema: durationFlag(),
    default: '5s',
  },
  namespace: {
    help: 'where a passwordSecretRef without a namespace points',
    arg: 'NS',
    schema: z.string().min(1).max(63),
    default: 'flock-system',
    env: ['POD_NAMESPACE'],
  },
} as const;

export const AGENT_FLAGS = new FlagSet('flock-agent', FLAGS);

/** Every setting, from typed values (tests); flags and environment go through loadAgentConfig. */
export const AgentConfig = AGENT_FLAGS.schema;
export type AgentConfig = FlagValues<typeof FLAGS>;

/** Read settings from argv and the environment; throws a UsageError naming every bad flag. */
export function loadAgentConfig(argv: readonly string[], env: NodeJS.ProcessEnv): AgentConfig {
  const config = AGENT_FLAGS.parse(argv, env);
  if ((config.bfdConfigPath === undefined) !== (config.bfdSocketPath === undefined))
    throw new UsageError(
      'flock-agent: --bfd-config and --bfd-socket go together (the BFD speaker is both)',
    );
  return config;
}

/**
 * The ports no hostPort may take on this node: the node daemons' (BGP, BFD, the kubelet's),
 * the agent's own --health-port (TCP) and --reserved-host-ports.
 */
export function reservedHostPorts(
  config: Pick<AgentConfig, 'healthPort' | 'reservedHostPorts'>,
): ReservedHostPorts[] {
  return [
    ...NODE_DAEMON_PORTS,
    ...(config.healthPort
      ? [reservedPort('tcp', config.healthPort, 'the flock agent (--health-port)')]
      : []),
    ...config.reservedHostPorts,
  ];
}
