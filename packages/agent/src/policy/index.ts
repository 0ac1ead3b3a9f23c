export * from './caches.js';
export * from './nft.js';
export * from './reconciler.js';
export * from './drop-counters.js';
export * from './result.js';
export * from './state.js';
export * from './validate.js';
export * from './events.js';
