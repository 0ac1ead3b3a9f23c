export * from './address.js';
export * from './prefix.js';
export * from './carve.js';
export * from './reserved.js';
export * from './interface-id.js';
export * from './allocation.js';
export * from './allocator.js';
export * from './ip-algo.js';
export type { QuarantineEntry } from './address-book.js';
