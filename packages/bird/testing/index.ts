// @flock/bird/testing: BIRD as the tests and the lab run it: a foreground daemon in a network
// namespace (BirdProcess) and the router that learns what the nodes announce (TestRouter).
export { BirdProcess, type BirdPaths } from './bird-process.js';
export {
  TestRouter,
  birdPaths,
  nodeBirdPaths,
  parseRoutesAll,
  startNodeBird,
  type LearnedRoute,
  type RouterRoute,
  type TestRouterOptions,
} from './router.js';
