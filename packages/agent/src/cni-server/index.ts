export { startCniServer, type CniHandler, type CniServer } from './server.js';
export { prepareSocketPath } from './socket-path.js';
