// The operator's PeerSlice and NodePeer publishers alone, as a process beside the fan-out bench's
// cluster: what the operator runs for the `peer-slices` arms, without its Pool controller (which
// would take the bench's NodeConfigs for orphans) and its other caches. Loaded from the
// operator's build by path: the agent does not depend on the operator package.
//   node publisher.js --kubeconfig PATH [--workers N] [--batch-ms N]      (started by run.ts)
import { parseArgs } from 'node:util';
import {
  Cache,
  HttpTransport,
  NODES,
  createLogger,
  loadKubeConfig,
  resourceListWatch,
  type KubeObject,
} from '@flock/kube';
import { loadNodePeerPublisher, loadPublisher } from './publisher-module.js';

const { values } = parseArgs({
  strict: true,
  options: {
    kubeconfig: { type: 'string' },
    workers: { type: 'string' },
    'batch-ms': { type: 'string' },
  },
});
if (!values.kubeconfig) throw new Error('publisher.js --kubeconfig PATH');
const PeerSlicePublisher = await loadPublisher();
const { NodePeerPublisher, NodeSchema } = await loadNodePeerPublisher();
const transport = new HttpTransport(loadKubeConfig(values.kubeconfig));
const logger = createLogger('bench-publisher', 'error');
const publisher = new PeerSlicePublisher({
  transport,
  logger,
  ...(values.workers ? { workers: Number(values.workers) } : {}),
  ...(values['batch-ms'] ? { batchMs: Number(values['batch-ms']) } : {}),
});
// The operator's Node cache, which the NodePeer publisher reads.
const nodes = new Cache<KubeObject>({
  source: resourceListWatch(transport, NODES),
  schema: NodeSchema,
  logger,
});
const nodePeers = new NodePeerPublisher({ transport, logger, nodes });
nodes.start();
publisher.start();
nodePeers.start();
await Promise.all([publisher.setLeading(true), nodePeers.setLeading(true)]);
process.once(
  'SIGTERM',
  () =>
    void Promise.all([publisher.stop(), nodePeers.stop(), nodes.stop()]).finally(() =>
      process.exit(0),
    ),
);
