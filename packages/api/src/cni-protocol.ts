// The CNI protocol's constants and rules without any schema library: the plugin, which is
// started for every pod and must start fast, checks with these functions; the zod schemas in
// cni.ts are built on the very same functions, so both sides apply one set of rules.

/** CNI spec versions the plugin answers; results are converted to the caller's version. */
export const CNI_VERSIONS = ['0.4.0', '1.0.0', '1.1.0'] as const;
export const CNI_VERSION = '1.1.0';
export type CniVersion = (typeof CNI_VERSIONS)[number];

export const CNI_COMMANDS = ['ADD', 'DEL', 'CHECK', 'STATUS', 'GC', 'VERSION'] as const;
export type CniCommand = (typeof CNI_COMMANDS)[number];

/** The commands the plugin forwards to the agent (VERSION it answers itself). */
export const AGENT_COMMANDS = ['ADD', 'DEL', 'CHECK', 'STATUS', 'GC'] as const;
export type AgentCommand = (typeof AGENT_COMMANDS)[number];

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
  /** An unexpected failure inside the plugin or the agent (libcni's ErrInternal is the same). */
  Internal: 999,
} as const;

/** Default path of the agent's socket (root-only directory). */
export const DEFAULT_AGENT_SOCKET = '/run/flock/cni.sock';

/** Bounds of the agent request: CNI_ARGS keys and values, the plugin's timeout. */
export const CNI_ARG_KEY_MAX = 253;
export const CNI_ARG_VALUE_MAX = 1024;
export const TIMEOUT_MS_MIN = 100;
export const TIMEOUT_MS_MAX = 600_000;
/** How long the plugin waits for the agent when the conflist does not say. */
export const DEFAULT_TIMEOUT_MS = 60_000;

/** Which environment-derived request fields each command needs. */
const REQUIRED_FIELDS: Readonly<
  Record<AgentCommand, readonly ('containerID' | 'netns' | 'ifName')[]>
> = {
  ADD: ['containerID', 'netns', 'ifName'],
  CHECK: ['containerID', 'netns', 'ifName'],
  DEL: ['containerID', 'ifName'],
  STATUS: [],
  GC: [],
};

/**
 * The environment-derived fields a request lacks for its command (ADD without `netns`, ...);
 * nothing when the request is not an object or its command is unknown (reported elsewhere).
 */
export function missingFields(request: unknown): FieldProblem[] {
  if (typeof request !== 'object' || request === null || Array.isArray(request)) return [];
  const r = request as Record<string, unknown>;
  const command = r['command'];
  if (typeof command !== 'string' || !Object.hasOwn(REQUIRED_FIELDS, command)) return [];
  return REQUIRED_FIELDS[command as AgentCommand]
    .filter((field) => r[field] === undefined)
    .map((field) => ({ path: [field], problem: `required for ${command}` }));
}

/** The runtime's container ID, as the spec allows: alphanumerics plus _ . - (not first). */
export function containerIdProblem(id: string): string | undefined {
  return /^[A-Za-z0-9][A-Za-z0-9_.-]{0,254}$/.test(id)
    ? undefined
    : 'container ID must be alphanumerics, _ . - (starting alphanumeric), at most 255';
}

/** A Linux interface name: 1-15 bytes, no '/', ':', whitespace, not "." or "..". */
export function ifNameProblem(name: string): string | undefined {
  if (!/^[A-Za-z0-9_.-]{1,15}$/.test(name))
    return 'interface name must be 1-15 characters of A-Z a-z 0-9 _ . -';
  if (name === '.' || name === '..') return 'interface name must not be "." or ".."';
  return undefined;
}

/** A network namespace path as runtimes pass it: absolute, plain characters, no "..". */
export function netnsProblem(path: string): string | undefined {
  if (path.length > 4096) return 'netns path must be at most 4096 characters';
  if (!/^\/[A-Za-z0-9_./-]*$/.test(path))
    return 'netns must be an absolute path of A-Z a-z 0-9 _ . / -';
  if (path.split('/').includes('..')) return 'netns path must not contain ".."';
  return undefined;
}

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

/** A problem with one field of a request, a configuration or a reply. */
export interface FieldProblem {
  path: readonly PropertyKey[];
  problem: string;
}

/** `config.socketPath`, `args.K8S_POD_NAME`, `["cni.dev/valid-attachments"][0].ifname`. */
export function formatFieldPath(prefix: string, path: readonly PropertyKey[]): string {
  let out = prefix;
  for (const part of path) {
    if (typeof part === 'number') out += `[${part}]`;
    else if (typeof part === 'string' && /^[A-Za-z_$][\w$]*$/.test(part))
      out += out ? `.${part}` : part;
    else out += `[${JSON.stringify(String(part))}]`;
  }
  return out || '(value)';
}

/**
 * One line naming each bad field and why, the same in the plugin and in the agent:
 * `config.socketPath: expected string; ifName: required for ADD`.
 */
export function describeProblems(
  problems: readonly FieldProblem[],
  prefix = '',
  max = 3,
): { fields: string[]; message: string } {
  const shown = problems.slice(0, max);
  const fields = shown.map((p) => formatFieldPath(prefix, p.path));
  const parts = shown.map((p, n) => `${fields[n]}: ${p.problem}`);
  if (problems.length > max) parts.push(`(${problems.length - max} more)`);
  return { fields, message: parts.join('; ') };
}
