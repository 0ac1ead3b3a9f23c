export * from './preflight.js';
export * from './netns.js';
