// The operator's PeerSlice publisher alone, as a process beside the fan-out bench's cluster:
// what the operator runs for the `peer-slices` arm, without its Pool controller (which would
// take the bench's NodeConfigs for orphans) and its other caches. Loaded from the operator's
// build by path: the agent does not depend on the operator package.
//   node publisher.js --kubeconfig PATH [--workers N] [--batch-ms N]      (started by run.ts)
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';
import { HttpTransport, createLogger, loadKubeConfig, type KubeTransport } from '@flock/kube';
import { repoRoot } from '@flock/testkit';

interface Publisher {
  start(): void;
  setLeading(leading: boolean): Promise<void>;
  stop(): Promise<void>;
}
interface PublisherModule {
  PeerSlicePublisher: new (o: {
    transport: KubeTransport;
    logger: ReturnType<typeof createLogger>;
    workers?: number;
    batchMs?: number;
  }) => Publisher;
}

export const PUBLISHER_MODULE = join(
  repoRoot(import.meta.dirname),
  'packages/operator/dist/src/peer-slices/publisher.js',
);

const { values } = parseArgs({
  strict: true,
  options: {
    kubeconfig: { type: 'string' },
    workers: { type: 'string' },
    'batch-ms': { type: 'string' },
  },
});
if (!values.kubeconfig) throw new Error('publisher.js --kubeconfig PATH');
if (!existsSync(PUBLISHER_MODULE))
  throw new Error(`${PUBLISHER_MODULE} is missing: ./dev npm run build`);
const { PeerSlicePublisher } = (await import(
  pathToFileURL(PUBLISHER_MODULE).href
)) as PublisherModule;
const publisher = new PeerSlicePublisher({
  transport: new HttpTransport(loadKubeConfig(values.kubeconfig)),
  logger: createLogger('bench-publisher', 'error'),
  ...(values.workers ? { workers: Number(values.workers) } : {}),
  ...(values['batch-ms'] ? { batchMs: Number(values['batch-ms']) } : {}),
});
publisher.start();
await publisher.setLeading(true);
process.once('SIGTERM', () => void publisher.stop().finally(() => process.exit(0)));
