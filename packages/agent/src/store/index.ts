export * from './allocation-store.js';
export * from './schema.js';
