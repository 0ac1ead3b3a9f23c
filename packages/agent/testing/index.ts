// @flock/agent/testing: the agent as the tests and the lab's benchmarks run it: a simulated node
// (the real agent process in a network namespace, the real plugin), a test cluster with Pods,
// the installed plugin, and the datapath's plan and batch text (the CNI latency bench's
// ip -batch floor replays exactly the commands the agent would run), and the datapath over the
// in-memory kernel (an agent started without root).
export { AGENT_MAIN, TestNode, type AgentProcess, type NodeOptions } from './node-harness.js';
export { createTestPod, startTestCluster, type TestCluster } from './test-cluster.js';
export { installPlugin, type PluginInstall } from './plugin-process.js';
export { actionTokens, batchText } from '../src/datapath/commands.js';
export { hostVethName, vethMacs } from '../src/datapath/naming.js';
export { freshHostActions, freshPodActions } from '../src/datapath/plan.js';
export { validatePod } from '../src/datapath/validate.js';
export { FakeDatapath } from './datapath/fake.js';
