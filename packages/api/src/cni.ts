// The CNI side of flock: the plugin's network configuration, the request the plugin forwards
// to the agent over its unix socket, and the result and error objects of the CNI spec.
// The plugin validates what the runtime gives it; the agent validates the socket request again.
import { z } from 'zod';

/** CNI spec versions the plugin answers; results are converted to the caller's version. */
export const CNI_VERSIONS = ['0.4.0', '1.0.0', '1.1.0'] as const;
export const CNI_VERSION = '1.1.0';
export type CniVersion = (typeof CNI_VERSIONS)[number];

export const CNI_COMMANDS = ['ADD', 'DEL', 'CHECK', 'STATUS', 'GC', 'VERSION'] as const;
export type CniCommand = (typeof CNI_COMMANDS)[number];

/** Error codes of the CNI spec (1.1.0, "Error" section) that flock returns. */
export const CniErrorCode = {
  IncompatibleVersion: 1,
  UnsupportedField: 2,
  UnknownContainer: 3,
  InvalidEnvironment: 4,
  IoFailure: 5,
  DecodeFailure: 6,
  InvalidNetworkConfig: 7,
  TryAgainLater: 11,
  /** STATUS: the plugin is not available (the agent is not ready). */
  PluginNotAvailable: 50,
  PluginLimitedConnectivity: 51,
  /** flock-specific (>= 100): a step of ADD failed; the message names the step. */
  SetupFailed: 100,
  /** flock-specific: the request asks for something this node does not allow (anycast, pinned). */
  NotAllowed: 101,
  /** flock-specific: the node's address space is exhausted. */
  Exhausted: 102,
} as const;

/** Default path of the agent's socket (root-only directory). */
export const DEFAULT_AGENT_SOCKET = '/run/flock/cni.sock';

/** The runtime's container ID, as the spec allows: alphanumerics plus _ . - (not first). */
export const ContainerId = z
  .string()
  .regex(
    /^[A-Za-z0-9][A-Za-z0-9_.-]{0,254}$/,
    'container ID must be alphanumerics, _ . - (starting alphanumeric), at most 255',
  );

/** A Linux interface name: 1-15 bytes, no '/', ':', whitespace, not "." or "..". */
export const IfName = z
  .string()
  .regex(/^[A-Za-z0-9_.-]{1,15}$/, 'interface name must be 1-15 characters of A-Z a-z 0-9 _ . -')
  .refine((s) => s !== '.' && s !== '..', 'interface name must not be "." or ".."');

/** A network namespace path as runtimes pass it. */
export const NetnsPath = z
  .string()
  .max(4096)
  .regex(/^\/[A-Za-z0-9_./-]*$/, 'netns must be an absolute path of A-Z a-z 0-9 _ . / -')
  .refine((s) => !s.split('/').includes('..'), 'netns path must not contain ".."');

/** flock's network configuration (the conflist entry with "type": "flock"). */
export const FlockNetConf = z.looseObject({
  cniVersion: z.string(),
  name: z.string().min(1),
  type: z.literal('flock'),
  /** Where the agent listens (default /run/flock/cni.sock). */
  socketPath: z.string().startsWith('/').optional(),
  /** How long the plugin waits for the agent (default 60 s). */
  timeoutMs: z.int().min(100).max(600_000).optional(),
  prevResult: z.looseObject({}).optional(),
  'cni.dev/valid-attachments': z
    .array(z.object({ containerID: z.string(), ifname: z.string() }))
    .optional(),
});
export type FlockNetConf = z.infer<typeof FlockNetConf>;

/** What the plugin sends the agent: one JSON object per connection. */
export const AgentRequest = z.object({
  command: z.enum(['ADD', 'DEL', 'CHECK', 'STATUS', 'GC']),
  containerID: ContainerId.optional(),
  netns: NetnsPath.optional(),
  ifName: IfName.optional(),
  /** CNI_ARGS as key/value pairs (K8S_POD_NAMESPACE, K8S_POD_NAME, K8S_POD_UID, ...). */
  args: z.record(z.string().max(253), z.string().max(1024)).default({}),
  /** The network configuration from stdin, already validated by the plugin. */
  config: FlockNetConf,
});
export type AgentRequest = z.infer<typeof AgentRequest>;

export const CniInterface = z.object({
  name: z.string(),
  mac: z.string().optional(),
  mtu: z.int().optional(),
  sandbox: z.string().optional(),
});

export const CniIp = z.object({
  address: z.string(),
  gateway: z.string().optional(),
  interface: z.int().min(0).optional(),
});

export const CniRoute = z.object({ dst: z.string(), gw: z.string().optional() });

/** An ADD/CHECK result in CNI 1.1.0 form. */
export const CniResult = z.object({
  cniVersion: z.string(),
  interfaces: z.array(CniInterface).optional(),
  ips: z.array(CniIp).optional(),
  routes: z.array(CniRoute).optional(),
  dns: z.looseObject({}).optional(),
});
export type CniResult = z.infer<typeof CniResult>;

export const CniError = z.object({
  cniVersion: z.string(),
  code: z.int().min(1),
  msg: z.string(),
  details: z.string().optional(),
});
export type CniError = z.infer<typeof CniError>;

/** The agent's reply: a result (ADD/CHECK), nothing (DEL/STATUS/GC), or an error. */
export const AgentResponse = z.discriminatedUnion('ok', [
  z.object({ ok: z.literal(true), result: CniResult.optional() }),
  z.object({
    ok: z.literal(false),
    error: z.object({ code: z.int().min(1), msg: z.string(), details: z.string().optional() }),
  }),
]);
export type AgentResponse = z.infer<typeof AgentResponse>;

/** Parse CNI_ARGS ("K1=V1;K2=V2"); undefined when malformed. */
export function parseCniArgs(raw: string | undefined): Record<string, string> | undefined {
  const out: Record<string, string> = {};
  if (!raw) return out;
  for (const pair of raw.split(';')) {
    if (pair === '') continue;
    const eq = pair.indexOf('=');
    if (eq <= 0) return undefined;
    out[pair.slice(0, eq)] = pair.slice(eq + 1);
  }
  return out;
}
