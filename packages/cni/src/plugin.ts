// One plugin invocation, start to finish: environment and stdin in, the spec's result or
// error object and an exit code out. No process globals here, so it is testable in-process.
import {
  CNI_VERSION,
  CNI_VERSIONS,
  CniErrorCode,
  DEFAULT_AGENT_SOCKET,
  DEFAULT_TIMEOUT_MS,
  type AgentResponse,
  type CniVersion,
} from '@flock/api';
import { callAgent as realCallAgent, type CallAgent } from './agent-client.js';
import { CniFailure, errorObject } from './failure.js';
import { buildRequest, readCommand, type Env } from './invocation.js';
import { isSupportedVersion, resultForVersion } from './versions.js';

export interface PluginInput {
  env: Env;
  /** The whole of stdin, or the error that reading it gave. */
  stdin: string | Error;
  /** Lines for stderr (unstructured notes; the runtime reads only stdout). */
  warn?: (line: string) => void;
}

export interface PluginOutput {
  /** What to print on stdout ('' for nothing). */
  stdout: string;
  exitCode: 0 | 1;
}

const json = (value: unknown) => `${JSON.stringify(value)}\n`;

type Stdin = { config: Record<string, unknown> } | { failure: CniFailure };

/** The network configuration on stdin, decoded once (every command but VERSION needs it). */
function decodeStdin(stdin: string | Error): Stdin {
  if (stdin instanceof Error)
    return {
      failure: new CniFailure(
        CniErrorCode.IoFailure,
        'cannot read the network configuration from stdin',
        stdin.message,
      ),
    };
  let config: unknown;
  try {
    config = JSON.parse(stdin);
  } catch (e) {
    return {
      failure: new CniFailure(
        CniErrorCode.DecodeFailure,
        'cannot decode the network configuration on stdin',
        (e as Error).message,
      ),
    };
  }
  if (typeof config !== 'object' || config === null || Array.isArray(config))
    return {
      failure: new CniFailure(
        CniErrorCode.DecodeFailure,
        'the network configuration on stdin is not a JSON object',
      ),
    };
  return { config: config as Record<string, unknown> };
}

/** VERSION: answered here, without the agent, echoing the caller's cniVersion (spec). */
function versionReply(stdin: Stdin): string {
  const requested = 'config' in stdin ? stdin.config['cniVersion'] : undefined;
  const cniVersion =
    typeof requested === 'string' && /^\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(requested)
      ? requested
      : CNI_VERSION;
  return json({ cniVersion, supportedVersions: [...CNI_VERSIONS] });
}

function replyFor(command: string, version: CniVersion, response: AgentResponse): PluginOutput {
  if (!response.ok) return { stdout: json(errorObject(response.error, version)), exitCode: 1 };
  if (command !== 'ADD') return { stdout: '', exitCode: 0 }; // CHECK, DEL, STATUS, GC: no output
  if (!response.result)
    throw new CniFailure(CniErrorCode.IoFailure, 'the flock agent answered ADD without a result');
  return { stdout: json(resultForVersion(response.result, version)), exitCode: 0 };
}

/** Run one invocation. `callAgent` is the socket client; tests may pass another. */
export async function runPlugin(
  input: PluginInput,
  callAgent: CallAgent = realCallAgent,
): Promise<PluginOutput> {
  const warn = input.warn ?? (() => {});
  const stdin = decodeStdin(input.stdin);
  // Errors are answered in the caller's version when it is one we speak.
  const asked = 'config' in stdin ? stdin.config['cniVersion'] : undefined;
  const version = isSupportedVersion(asked) ? asked : CNI_VERSION;
  try {
    const command = readCommand(input.env);
    if (command === 'VERSION') return { stdout: versionReply(stdin), exitCode: 0 };
    if ('failure' in stdin) throw stdin.failure;
    const config = stdin.config;
    if (!isSupportedVersion(config['cniVersion']))
      throw new CniFailure(
        CniErrorCode.IncompatibleVersion,
        `unsupported cniVersion ${JSON.stringify(config['cniVersion'] ?? null)}`,
        `flock supports ${CNI_VERSIONS.join(', ')}`,
      );
    const request = buildRequest(command, input.env, config, config['cniVersion'], warn);
    const response = await callAgent(request, {
      socketPath: request.config.socketPath ?? DEFAULT_AGENT_SOCKET,
      timeoutMs: request.config.timeoutMs ?? DEFAULT_TIMEOUT_MS,
    });
    return replyFor(command, config['cniVersion'], response);
  } catch (e) {
    const f =
      e instanceof CniFailure
        ? e
        : new CniFailure(CniErrorCode.Internal, 'flock CNI plugin failed', (e as Error).message);
    return { stdout: json(errorObject(f, version)), exitCode: 1 };
  }
}
