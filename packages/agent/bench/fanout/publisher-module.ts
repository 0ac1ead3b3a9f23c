// The operator's PeerSlice publisher, loaded from the operator's build by path (the agent does
// not depend on the operator package): for the fan-out bench's publisher process and the
// memory bench.
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import type { Logger } from '@flock/api';
import type { KubeTransport } from '@flock/kube';
import { repoRoot } from '@flock/testkit';

/** What the benches use of a publisher and its two caches. */
export interface Publisher {
  readonly pods: { synced: Promise<void>; size: number; list(): { peer?: unknown }[] };
  readonly slices: { size: number; list(): { spec: { pods: unknown[] } }[] };
  start(): void;
  setLeading(leading: boolean): Promise<void>;
  stop(): Promise<void>;
}

export type PublisherClass = new (o: {
  transport: KubeTransport;
  logger: Logger;
  workers?: number;
  batchMs?: number;
}) => Publisher;

const MODULE = join(
  repoRoot(import.meta.dirname),
  'packages/operator/dist/src/peer-slices/publisher.js',
);

export async function loadPublisher(): Promise<PublisherClass> {
  if (!existsSync(MODULE)) throw new Error(`${MODULE} is missing: ./dev npm run build`);
  const module = (await import(pathToFileURL(MODULE).href)) as {
    PeerSlicePublisher: PublisherClass;
  };
  return module.PeerSlicePublisher;
}
