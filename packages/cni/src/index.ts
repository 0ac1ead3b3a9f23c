// @flock/cni as a library: the pieces of the plugin executable (src/main.ts), for tests and
// for tools that want to drive the agent socket the way the plugin does.
export { runPlugin, type PluginInput, type PluginOutput } from './plugin.js';
export { callAgent, type CallAgent, type CallOptions } from './agent-client.js';
export { CniFailure, errorObject } from './failure.js';
export { buildRequest, readCommand, type Env } from './invocation.js';
export { asAgentRequest, parseReply, requestProblems } from './checks.js';
export {
  commandAllowed,
  isSupportedVersion,
  prevResultForAgent,
  resultForVersion,
} from './versions.js';
