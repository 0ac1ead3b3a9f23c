// @flock/netpol/testing: the in-memory nft table that unit tests of code built on @flock/netpol
// (the agent's policy reconciler) run their scripts against.
export { FakeNftKernel } from './fake-kernel.js';
