export * from './model.js';
export * from './render.js';
export * from './render-bfd-speaker.js';
export * from './reply.js';
export * from './status.js';
export * from './client.js';
export * from './apply.js';
