// @flock/kube, room by room (README.md says what lives where).
// core: the vocabulary every room uses.
export * from './core/errors.js';
export * from './core/clock.js';
export * from './core/backoff.js';
export type { MetricsOptions } from './core/metrics.js';
export * from './core/logger.js';
export * from './core/resource.js';
export * from './core/selectors.js';
// transport: reaching and authenticating to an API server.
export * from './transport/transport.js';
export * from './transport/credentials.js';
export * from './transport/http-transport.js';
export * from './transport/kubeconfig.js';
// informer: the list-then-watch cache.
export * from './informer/listwatch-source.js';
export type { IndexFunc } from './informer/store.js';
export type { CacheHandler } from './informer/handlers.js';
export * from './informer/cache.js';
export * from './informer/cache-view.js';
// control: work queue, reconcile runner, leader election, the Loop and its metrics.
export * from './control/queue.js';
export * from './control/controller.js';
export * from './control/lease-store.js';
export * from './control/leader.js';
export * from './control/loop-metrics.js';
export * from './control/loop.js';
// api: writes, Events, typed clients of any resource.
export * from './api/apply.js';
export * from './api/delete.js';
export * from './api/events.js';
export * from './api/served.js';
export { InvalidObjectError } from './api/resource-client.js';
// flock: Pool and NodeConfig.
export * from './flock/clients.js';
// process: what every flock program has (command line, health server).
export * from './process/health.js';
export * from './process/duration.js';
export * from './process/flags.js';
