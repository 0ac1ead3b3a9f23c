export * from './run.js';
export * from './atomic-file.js';
