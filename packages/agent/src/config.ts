// The agent's settings: command-line flags override environment variables (FLOCK_*), which
// override the defaults. Parsed with zod so a typo is a clear start-up error.
import { DEFAULT_AGENT_SOCKET, ipString } from '@flock/api';
import { z } from 'zod';

/** A duration: milliseconds as a number, or text such as 500ms, 30s, 5m, 1h. */
const duration = z.union([
  z.number().int().min(0),
  z
    .string()
    .regex(/^\d+(ms|s|m|h)$/, 'a duration such as 500ms, 30s, 5m, 1h')
    .transform((s) => {
      const n = Number.parseInt(s, 10);
      const unit = s.replace(/^\d+/, '');
      return n * { ms: 1, s: 1000, m: 60_000, h: 3_600_000 }[unit as 'ms' | 's' | 'm' | 'h'];
    }),
]);

export const AgentConfig = z.object({
  /** This node's name (the Node object and its NodeConfig). */
  nodeName: z.string().min(1).max(253),
  kubeconfig: z.string().optional(),
  socketPath: z.string().startsWith('/').default(DEFAULT_AGENT_SOCKET),
  /** Allocation store file. */
  storePath: z.string().startsWith('/').default('/var/lib/flock/allocations.json'),
  /** How long to wait for this node's NodeConfig before giving up (exit 1). */
  nodeConfigTimeoutMs: duration.default(600_000),
  /** Released addresses wait this long before reuse. */
  addressQuarantineMs: duration.default(300_000),
  /** Periodic re-assertion of blackholes and the Node condition. */
  resyncMs: duration.default(30_000),
  /**
   * Restart a watch that delivered nothing, not even a bookmark (a quiet watch gets one every
   * one to two minutes), for this long: a silent watch hides pod deletions and NodeConfig changes.
   */
  watchdogMs: duration.refine((ms) => ms >= 1000, 'at least 1s').default(180_000),
  healthPort: z.coerce.number().int().min(0).max(65535).default(9901),
  /** Unset: every address of both families (the kubelet probes the node's primary IP). */
  healthHost: z.string().min(1).optional(),
  logLevel: z.enum(['error', 'warn', 'info', 'debug']).default('info'),
  /**
   * Run ip, nft and birdc from a small child process ("server", the default) or from the agent
   * itself ("direct"): forking the agent costs ten times more (see @flock/exec).
   */
  spawn: z.enum(['server', 'direct']).default('server'),
  /**
   * The node's network namespace when the agent does not run inside it (the lab and the kernel
   * tests run the agent on the machine's loopback, next to the API server, and wire pods in a
   * node namespace). Production leaves it unset: the agent runs in the host namespace.
   */
  hostNetns: z.string().startsWith('/').optional(),
  /** Test-only fault injection ("point[#n][,...]": SIGKILL there, see faults.ts); never in production. */
  testFaults: z.string().optional(),
  /**
   * bird.conf, written by the agent (0600) and read by BIRD. On tmpfs so that a rebooted node's
   * BIRD never starts from the announcements of a previous boot; the directory must exist (the
   * chart mounts it into both containers).
   */
  birdConfigPath: z.string().startsWith('/').default('/run/flock/bird/bird.conf'),
  /** BIRD's control socket (`bird -s`), in a directory shared with the BIRD container. */
  birdSocketPath: z.string().startsWith('/').default('/run/bird/bird.ctl'),
  /** BGP router ID for this node, over NodeConfig spec.bgp.routerID and the Node's address. */
  routerId: ipString('routerId', 4).optional(),
  /** The orphan sweep leaves allocations younger than this alone (the pod cache may lag). */
  orphanGraceMs: duration.default(10_000),
  /** How often the orphan sweep runs (besides pod deletions), and Secrets are re-read. */
  sweepPeriodMs: duration.default(30_000),
  /** How often the anycast routes and announcements are re-checked (besides events). */
  anycastPeriodMs: duration.default(2_000),
  /** How often BIRD is asked for its BGP sessions (NodeConfig status). */
  bgpStatusPeriodMs: duration.default(5_000),
  /** The agent's namespace: where a passwordSecretRef without a namespace points. */
  namespace: z.string().min(1).max(63).default('flock-system'),
});
export type AgentConfig = z.infer<typeof AgentConfig>;

const FLAGS: Record<string, keyof AgentConfig> = {
  '--node-name': 'nodeName',
  '--kubeconfig': 'kubeconfig',
  '--socket': 'socketPath',
  '--store': 'storePath',
  '--node-config-timeout': 'nodeConfigTimeoutMs',
  '--address-quarantine': 'addressQuarantineMs',
  '--resync': 'resyncMs',
  '--watchdog': 'watchdogMs',
  '--health-port': 'healthPort',
  '--health-host': 'healthHost',
  '--log-level': 'logLevel',
  '--spawn': 'spawn',
  '--test-faults': 'testFaults',
  '--host-netns': 'hostNetns',
  '--bird-config': 'birdConfigPath',
  '--bird-socket': 'birdSocketPath',
  '--router-id': 'routerId',
  '--orphan-grace': 'orphanGraceMs',
  '--sweep-period': 'sweepPeriodMs',
  '--anycast-period': 'anycastPeriodMs',
  '--bgp-status-period': 'bgpStatusPeriodMs',
  '--namespace': 'namespace',
};

/** Settings that environment variables can give too, first name first. */
const ENV: Partial<Record<keyof AgentConfig, readonly string[]>> = {
  nodeName: ['FLOCK_NODE_NAME', 'NODE_NAME'],
  kubeconfig: ['FLOCK_KUBECONFIG', 'KUBECONFIG'],
  socketPath: ['FLOCK_SOCKET'],
  storePath: ['FLOCK_STORE'],
  logLevel: ['FLOCK_LOG_LEVEL'],
  testFaults: ['FLOCK_TEST_FAULTS'],
  namespace: ['FLOCK_NAMESPACE', 'POD_NAMESPACE'],
};

/** 600000 → "10m": a default as the flag would take it. */
function formatMs(ms: number): string {
  for (const [unit, size] of [
    ['h', 3_600_000],
    ['m', 60_000],
    ['s', 1000],
  ] as const) {
    if (ms >= size && ms % size === 0) return `${ms / size}${unit}`;
  }
  return `${ms}ms`;
}

/** `flock-agent --help`: every flag with its default and environment variables. */
export function agentUsage(): string {
  const defaults: Partial<Record<keyof AgentConfig, unknown>> = AgentConfig.parse({
    nodeName: 'required',
  });
  const lines = Object.entries(FLAGS).map(([flag, key]) => {
    const value = defaults[key];
    const shown = key.endsWith('Ms') && typeof value === 'number' ? formatMs(value) : value;
    const notes = [
      key === 'nodeName' ? 'required' : value === undefined ? '' : `default ${String(shown)}`,
      ENV[key] ? `or $${ENV[key].join(', $')}` : '',
      key === 'testFaults' ? 'TEST ONLY: SIGKILL at these fault points' : '',
    ].filter(Boolean);
    return `  ${flag.padEnd(22)}${notes.join('; ')}`.trimEnd();
  });
  return [
    'usage: flock-agent [--flag VALUE | --flag=VALUE]...',
    ...lines,
    '  --help                print this and exit',
    '  --version             print the version and exit',
    'Durations: 500ms, 30s, 5m, 1h or milliseconds. Flags win over environment variables.',
  ].join('\n');
}

/** Read settings from argv and the environment; throws a message naming every bad setting. */
export function loadAgentConfig(argv: string[], env: NodeJS.ProcessEnv): AgentConfig {
  const raw: Record<string, string | undefined> = Object.fromEntries(
    Object.entries(ENV).map(([key, names]) => [
      key,
      names.map((n) => env[n]).find((v) => v !== undefined),
    ]),
  );
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i] as string;
    const [flag, inline] = arg.includes('=')
      ? [arg.slice(0, arg.indexOf('=')), arg.slice(arg.indexOf('=') + 1)]
      : [arg, undefined];
    const key = FLAGS[flag];
    if (!key) throw new Error(`unknown flag ${flag}; known: ${Object.keys(FLAGS).join(', ')}`);
    const value = inline ?? argv[++i];
    if (value === undefined) throw new Error(`${flag} needs a value`);
    raw[key] = value;
  }
  const defined = Object.fromEntries(Object.entries(raw).filter(([, v]) => v !== undefined));
  const parsed = AgentConfig.safeParse(defined);
  if (!parsed.success) {
    throw new Error(
      `bad agent settings: ${parsed.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; ')}`,
    );
  }
  return parsed.data;
}
