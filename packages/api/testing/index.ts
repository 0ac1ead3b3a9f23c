// @flock/api/testing: objects for tests of code built on @flock/api — typed builders of a
// NodeConfig, a Pool and a Pod, and the example specs and invalid cases the schema and CRD
// tests share.
export * from './builders.js';
export * from './testdata.js';
export * from './claims.js';
