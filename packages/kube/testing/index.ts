// @flock/kube/testing: in-memory twins for unit tests of code built on @flock/kube.
export * from './fake-apiserver.js';
export { FakeClient } from './fake-client.js';
export { serveOverHttp, type HttpFront } from './fake-http.js';
export { FakeWatch, type StoredEvent, type WatchFilter } from './fake-watch.js';
export type { FakeResourceOptions } from './fake-resources.js';
export * from './memory-logger.js';
