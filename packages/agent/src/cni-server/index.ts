export {
  startCniServer,
  type CniHandler,
  type CniServer,
  type CniServerOptions,
} from './server.js';
export { prepareSocketPath, socketAnswers } from './socket-path.js';
