// The CNI side of flock as zod schemas: the plugin's network configuration, the request the
// plugin forwards to the agent over its unix socket, and the result and error objects of the
// CNI spec. The agent validates every socket request with these. The plugin checks the same
// rules by hand (packages/cni/src/checks.ts, proven equivalent by property tests) because it
// is started for every pod and zod costs it ~5 ms (zod/mini) to ~25 ms (zod) of start-up.
import { z } from 'zod';
import {
  AGENT_COMMANDS,
  CNI_ARG_KEY_MAX,
  CNI_ARG_VALUE_MAX,
  CNI_VERSION,
  CNI_VERSIONS,
  DEFAULT_AGENT_SOCKET,
  DEFAULT_TIMEOUT_MS,
  TIMEOUT_MS_MAX,
  TIMEOUT_MS_MIN,
  type CniVersion,
  containerIdProblem,
  describeProblems,
  ifNameProblem,
  missingFields,
  netnsProblem,
  type FieldProblem,
} from './cni-protocol.js';

export * from './cni-protocol.js';

/** A string schema whose only rule is `problem` (shared with the plugin's checks). */
const ruledString = (problem: (s: string) => string | undefined) =>
  z.string().check((ctx) => {
    const p = problem(ctx.value);
    if (p) ctx.issues.push({ code: 'custom', message: p, input: ctx.value });
  });

export const ContainerId = ruledString(containerIdProblem);
export const IfName = ruledString(ifNameProblem);
export const NetnsPath = ruledString(netnsProblem);

/** One entry of GC's `cni.dev/valid-attachments`. */
const CniAttachment = z.object({ containerID: z.string(), ifname: z.string() });

/** flock's network configuration (the conflist entry with "type": "flock"). */
export const FlockNetConf = z.looseObject({
  cniVersion: z.string(),
  name: z.string().min(1),
  type: z.literal('flock'),
  /** Where the agent listens (default /run/flock/cni.sock). */
  socketPath: z.string().startsWith('/').optional(),
  /** How long the plugin waits for the agent (default 60 s). */
  timeoutMs: z.int().min(TIMEOUT_MS_MIN).max(TIMEOUT_MS_MAX).optional(),
  prevResult: z.looseObject({}).optional(),
  'cni.dev/valid-attachments': z.array(CniAttachment).optional(),
});
export type FlockNetConf = z.infer<typeof FlockNetConf>;

/** flock's entry of a conflist (the runtime adds cniVersion and name when it calls the plugin). */
export interface FlockPluginConf {
  type: 'flock';
  socketPath: string;
  timeoutMs: number;
  /** The runtime passes the pod's hostPorts in runtimeConfig.portMappings. */
  capabilities: { portMappings: true };
}
/** A plugin chained after flock's (portmap, bandwidth, ...): its own configuration. */
export type ChainedPluginConf = { type: string } & Record<string, unknown>;

export interface FlockConflist {
  cniVersion: string;
  /** The versions a runtime may choose from (libcni takes the newest it speaks). */
  cniVersions?: string[];
  name: string;
  plugins: [FlockPluginConf, ...ChainedPluginConf[]];
}

export interface FlockConflistOptions {
  /** The network's name (default `flock`). */
  name?: string;
  socketPath?: string;
  timeoutMs?: number;
  /** One spec version and no `cniVersions` (a runtime test driving each version in turn). */
  cniVersion?: CniVersion;
  /** Plugins run after flock's, in order. */
  chained?: readonly ChainedPluginConf[];
}

/**
 * The conflist of flock's network (/etc/cni/net.d/10-flock.conflist): flock's plugin first, then
 * `chained`. The defaults are the shipped file's (packages/cni/examples/10-flock.conflist, which
 * a cni test compares with this). flock's entry is checked with FlockNetConf, as the agent reads it.
 */
export function flockConflist(o: FlockConflistOptions = {}): FlockConflist {
  const name = o.name ?? 'flock';
  const cniVersion = o.cniVersion ?? CNI_VERSION;
  const flock: FlockPluginConf = {
    type: 'flock',
    socketPath: o.socketPath ?? DEFAULT_AGENT_SOCKET,
    timeoutMs: o.timeoutMs ?? DEFAULT_TIMEOUT_MS,
    capabilities: { portMappings: true },
  };
  FlockNetConf.parse({ cniVersion, name, ...flock });
  return {
    cniVersion,
    ...(o.cniVersion ? {} : { cniVersions: [...CNI_VERSIONS] }),
    name,
    plugins: [flock, ...(o.chained ?? [])],
  };
}

/**
 * What the plugin sends the agent: one JSON object per connection. Which of containerID,
 * netns and ifName a command needs is checked by parseAgentRequest (use that to validate).
 */
export const AgentRequest = z.object({
  command: z.enum(AGENT_COMMANDS),
  containerID: ContainerId.optional(),
  netns: NetnsPath.optional(),
  ifName: IfName.optional(),
  /** CNI_ARGS as key/value pairs (K8S_POD_NAMESPACE, K8S_POD_NAME, K8S_POD_UID, ...). */
  args: z.record(z.string().max(CNI_ARG_KEY_MAX), z.string().max(CNI_ARG_VALUE_MAX)).default({}),
  /** The network configuration from stdin, already checked by the plugin. */
  config: FlockNetConf,
});
export type AgentRequest = z.infer<typeof AgentRequest>;

/**
 * Validate an agent request: AgentRequest's fields plus the ones its command needs, every
 * problem named (a missing netns is reported next to a bad config, not after it is fixed).
 */
export function parseAgentRequest(
  input: unknown,
): { success: true; data: AgentRequest } | { success: false; problems: FieldProblem[] } {
  const parsed = AgentRequest.safeParse(input);
  const problems = [
    ...(parsed.success ? [] : parsed.error.issues.map(issueProblem)),
    ...missingFields(input),
  ];
  if (parsed.success && problems.length === 0) return { success: true, data: parsed.data };
  return { success: false, problems };
}

const CniInterface = z.object({
  name: z.string(),
  mac: z.string().optional(),
  mtu: z.int().optional(),
  sandbox: z.string().optional(),
});

const CniIp = z.object({
  address: z.string(),
  gateway: z.string().optional(),
  interface: z.int().min(0).optional(),
});

const CniRoute = z.object({ dst: z.string(), gw: z.string().optional() });

/** An ADD/CHECK result in CNI 1.1.0 form. */
export const CniResult = z.object({
  cniVersion: z.string(),
  interfaces: z.array(CniInterface).optional(),
  ips: z.array(CniIp).optional(),
  routes: z.array(CniRoute).optional(),
  dns: z.looseObject({}).optional(),
});
export type CniResult = z.infer<typeof CniResult>;

/** The agent's reply: a result (ADD/CHECK), nothing (DEL/STATUS/GC), or an error. */
export const AgentResponse = z.discriminatedUnion('ok', [
  z.object({ ok: z.literal(true), result: CniResult.optional() }),
  z.object({
    ok: z.literal(false),
    error: z.object({ code: z.int().min(1), msg: z.string(), details: z.string().optional() }),
  }),
]);
export type AgentResponse = z.infer<typeof AgentResponse>;

/** The parts of a zod issue that describeIssues reads. */
interface IssueLike {
  readonly code: string;
  readonly path: readonly PropertyKey[];
  readonly message: string;
  readonly expected?: unknown;
  readonly values?: readonly unknown[];
  readonly minimum?: unknown;
  readonly maximum?: unknown;
  readonly keys?: readonly string[];
  readonly issues?: readonly IssueLike[];
}

/** A zod issue in the words the plugin's own checks use (see packages/cni/src/checks.ts). */
function issueProblem(issue: IssueLike): FieldProblem {
  const problem = (() => {
    switch (issue.code) {
      case 'invalid_type':
        return `expected ${issue.expected === 'int' ? 'integer' : String(issue.expected)}`;
      case 'invalid_value':
        return `expected ${(issue.values ?? []).map((v) => JSON.stringify(v)).join(' or ')}`;
      case 'too_small':
        return `must be at least ${String(issue.minimum)}`;
      case 'too_big':
        return `must be at most ${String(issue.maximum)}`;
      case 'unrecognized_keys':
        return `unknown keys ${(issue.keys ?? []).join(', ')}`;
      case 'invalid_union':
        return 'matches none of the allowed forms';
      case 'invalid_key':
        return `key ${issue.issues?.[0] ? issueProblem(issue.issues[0]).problem : 'is invalid'}`;
      default:
        return issue.message;
    }
  })();
  return { path: issue.path, problem };
}

/** One line naming each invalid field and why: `config.type: expected "flock"; ...`. */
export function describeIssues(
  issues: readonly IssueLike[],
  prefix = '',
  max = 3,
): { fields: string[]; message: string } {
  return describeProblems(issues.map(issueProblem), prefix, max);
}
