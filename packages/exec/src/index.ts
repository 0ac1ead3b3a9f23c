export * from './run.js';
export * from './atomic-file.js';
export * from './spawn-server.js';
