// The operator's PeerSlice and NodePeer publishers and its peer relay, loaded from the
// operator's build by path (the agent does not depend on the operator package): for the fan-out
// bench's publisher and relay processes and the memory benches.
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import type { Logger } from '@flock/api';
import type { Cache, KubeObject, KubeTransport } from '@flock/kube';
import type { z } from 'zod';

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

/** What the bench uses of the NodePeer publisher (it reads the operator's Node cache). */
export interface NodePeerPublisher {
  start(): void;
  setLeading(leading: boolean): Promise<void>;
  stop(): Promise<void>;
}

export type NodePeerPublisherClass = new (o: {
  transport: KubeTransport;
  logger: Logger;
  nodes: Cache<KubeObject>;
}) => NodePeerPublisher;

/** Where a module of the operator's build is (`path` under its dist/src). */
export async function operatorModule(path: string): Promise<string> {
  // Imported here, not at the top: the memory bench's agent side imports this module, and
  // @flock/testkit would add ≈ 20 MiB of heap to the process it measures.
  const { repoRoot } = await import('@flock/testkit');
  const file = join(repoRoot(import.meta.dirname), 'packages/operator/dist/src', path);
  if (!existsSync(file)) throw new Error(`${file} is missing: ./dev npm run build`);
  return file;
}

async function load<T>(path: string): Promise<T> {
  return (await import(pathToFileURL(await operatorModule(path)).href)) as T;
}

export async function loadPublisher(): Promise<PublisherClass> {
  return (await load<{ PeerSlicePublisher: PublisherClass }>('peer-slices/publisher.js'))
    .PeerSlicePublisher;
}

/** The NodePeer publisher and the schema of the operator's Node cache it reads. */
export async function loadNodePeerPublisher(): Promise<{
  NodePeerPublisher: NodePeerPublisherClass;
  NodeSchema: z.ZodType<KubeObject>;
}> {
  const { NodePeerPublisher } = await load<{ NodePeerPublisher: NodePeerPublisherClass }>(
    'peer-slices/node-peers.js',
  );
  const { NodeSchema } = await load<{ NodeSchema: z.ZodType<KubeObject> }>('nodes.js');
  return { NodePeerPublisher, NodeSchema };
}

/** What the fan-out bench uses of the operator's peer relay (peer-relay/relay.ts). */
export interface PeerRelay {
  readonly slices: { synced: Promise<void> };
  readonly log: { size: number; seq: number };
  readonly server: { connected: number };
  /** Watch the slices and serve; resolves with the port. */
  start(port: number, host?: string): Promise<number>;
  stop(): Promise<void>;
}

export type PeerRelayClass = new (o: {
  transport: KubeTransport;
  logger: Logger;
  allowedUsers: readonly string[];
  /** Instead of TokenReview (the memory bench). */
  authenticate?: (token: string) => Promise<'allowed' | 'denied'>;
  tls?: { cert: string; key: string };
  maxLogEvents?: number;
  coalesceMs?: number;
  /** The benches' agents all connect from one address. */
  maxConnectionsPerSource?: number;
}) => PeerRelay;

export const PEER_RELAY_MODULE = 'peer-relay/relay.js';

export async function loadPeerRelay(): Promise<PeerRelayClass> {
  return (await load<{ PeerRelay: PeerRelayClass }>(PEER_RELAY_MODULE)).PeerRelay;
}
