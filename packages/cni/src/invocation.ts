// The runtime's side of an invocation: CNI_* environment variables and the configuration on
// stdin, checked into the request the agent expects (the agent's own rules: see checks.ts).
import {
  CNI_COMMANDS,
  CniErrorCode,
  describeProblems,
  netnsProblem,
  parseCniArgs,
  type AgentCommand,
  type AgentRequest,
  type CniCommand,
  type CniVersion,
} from '@flock/api';
import { asAgentRequest, requestProblems } from './checks.js';
import { CniFailure } from './failure.js';
import { commandAllowed, prevResultForAgent } from './versions.js';

export type Env = Readonly<Record<string, string | undefined>>;

/** Request fields that come from the environment, and the variable each comes from. */
const ENV_OF_FIELD: Record<string, string> = {
  containerID: 'CNI_CONTAINERID',
  netns: 'CNI_NETNS',
  ifName: 'CNI_IFNAME',
  args: 'CNI_ARGS',
};

/** The spec treats an empty variable as unset. */
function envValue(env: Env, name: string): string | undefined {
  const v = env[name];
  return v === undefined || v === '' ? undefined : v;
}

/** CNI_COMMAND, or code 4 naming it. */
export function readCommand(env: Env): CniCommand {
  const raw = envValue(env, 'CNI_COMMAND');
  if (raw === undefined)
    throw new CniFailure(CniErrorCode.InvalidEnvironment, 'CNI_COMMAND is not set');
  if (!(CNI_COMMANDS as readonly string[]).includes(raw))
    throw new CniFailure(
      CniErrorCode.InvalidEnvironment,
      `CNI_COMMAND: unknown command ${JSON.stringify(raw.slice(0, 32))}`,
      `supported: ${CNI_COMMANDS.join(', ')}`,
    );
  return raw as CniCommand;
}

/**
 * The agent request for a forwarded command: environment (code 4 naming the variables) and
 * then configuration (code 7 naming the fields), checked by AgentRequest's rules.
 * `warn` receives notes for stderr (a DEL whose CNI_NETNS is unusable goes on without it).
 */
export function buildRequest(
  command: AgentCommand,
  env: Env,
  config: Record<string, unknown>,
  version: CniVersion,
  warn: (line: string) => void,
): AgentRequest {
  if (!commandAllowed(command, version))
    throw new CniFailure(
      CniErrorCode.IncompatibleVersion,
      `config version ${version} does not allow ${command}`,
      `${command} needs cniVersion 1.1.0`,
    );
  const attachment = command === 'ADD' || command === 'DEL' || command === 'CHECK';
  let netns = attachment ? envValue(env, 'CNI_NETNS') : undefined;
  if (command === 'DEL' && netns !== undefined && netnsProblem(netns) !== undefined) {
    // DEL is best effort (spec): clean up what can be found without the namespace.
    warn(`flock: DEL ignores unusable CNI_NETNS ${JSON.stringify(netns.slice(0, 128))}`);
    netns = undefined;
  }
  const rawArgs = attachment ? envValue(env, 'CNI_ARGS') : undefined;
  const args = parseCniArgs(rawArgs);
  if (args === undefined)
    throw new CniFailure(
      CniErrorCode.InvalidEnvironment,
      'CNI_ARGS: must be KEY=VALUE pairs separated by ";"',
    );
  const prevResult = config['prevResult'];
  const forwarded =
    typeof prevResult === 'object' && prevResult !== null && !Array.isArray(prevResult)
      ? { ...config, prevResult: prevResultForAgent(prevResult as Record<string, unknown>) }
      : config;
  const candidate = {
    command,
    containerID: attachment ? envValue(env, 'CNI_CONTAINERID') : undefined,
    netns,
    ifName: attachment ? envValue(env, 'CNI_IFNAME') : undefined,
    args,
    config: forwarded,
  };
  const problems = requestProblems(candidate);
  if (problems.length === 0) return asAgentRequest(candidate);

  const envProblems = problems
    .filter((i) => typeof i.path[0] === 'string' && i.path[0] in ENV_OF_FIELD)
    .map((i) => ({
      ...i,
      path: [ENV_OF_FIELD[i.path[0] as string] as string, ...i.path.slice(1)],
    }));
  if (envProblems.length > 0) {
    const { message } = describeProblems(envProblems);
    throw new CniFailure(CniErrorCode.InvalidEnvironment, `invalid environment: ${message}`);
  }
  // Only `config` is left (`command` is ours): name the fields of the configuration.
  const configProblems = problems.map((i) => ({
    ...i,
    path: i.path[0] === 'config' ? i.path.slice(1) : i.path,
  }));
  throw new CniFailure(
    CniErrorCode.InvalidNetworkConfig,
    `invalid network configuration: ${describeProblems(configProblems).message}`,
  );
}
