export * from './agent.js';
export * from './config.js';
export * from './cni/handlers.js';
export * from './cni/errors.js';
export * from './pods.js';
export * from './node-config.js';
export * from './cni-server/index.js';
