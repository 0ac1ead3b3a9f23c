// The operator's PeerSlice publisher alone, as a process beside the fan-out bench's cluster:
// what the operator runs for the `peer-slices` arm, without its Pool controller (which would
// take the bench's NodeConfigs for orphans) and its other caches. Loaded from the operator's
// build by path: the agent does not depend on the operator package.
//   node publisher.js --kubeconfig PATH [--workers N] [--batch-ms N]      (started by run.ts)
import { parseArgs } from 'node:util';
import { HttpTransport, createLogger, loadKubeConfig } from '@flock/kube';
import { loadPublisher } from './publisher-module.js';

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
const publisher = new PeerSlicePublisher({
  transport: new HttpTransport(loadKubeConfig(values.kubeconfig)),
  logger: createLogger('bench-publisher', 'error'),
  ...(values.workers ? { workers: Number(values.workers) } : {}),
  ...(values['batch-ms'] ? { batchMs: Number(values['batch-ms']) } : {}),
});
publisher.start();
await publisher.setLeading(true);
process.once('SIGTERM', () => void publisher.stop().finally(() => process.exit(0)));
