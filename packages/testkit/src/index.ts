export * from './preflight.js';
export * from './netns.js';
export * from './controlplane.js';
export * from './kubectl.js';
export * from './tcp-proxy.js';
export * from './eventually.js';
export * from './unix-bridge.js';
export * from './stats.js';
