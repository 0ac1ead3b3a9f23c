// @flock/agent: the node agent as a library (main.ts is the program): its start-up, settings,
// the CNI socket server and the status document `flock-agent status` reads.
export { startAgent, type RunningAgent } from './agent.js';
export * from './core/config.js';
export { AGENT_MALLOC_ENV } from './core/image-env.js';
export * from './cni-server/index.js';
export { nat64Address } from './nat64/tayga.js';
export { translatedRange } from './nat64/siit.js';
export { AgentStatus } from './status/snapshot.js';
