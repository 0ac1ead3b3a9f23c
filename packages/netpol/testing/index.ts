// @flock/netpol/testing: the in-memory nft table that unit tests of code built on @flock/netpol
// (the agent's policy reconciler) run their scripts against.
export { FakeNftKernel } from './fake-kernel.js';
// The kernel tier's node with pods and an uplink (tests of the agent's kernel edges too).
export { PolicyLab, UPLINK } from './lab.js';
export { NAMESPACE_LABELS, topology } from './topology.js';
