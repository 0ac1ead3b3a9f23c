// Address ownership for tests: the real ClaimBook on an in-memory API server (the real API
// server's twin: creates race to 409, updates carry resourceVersions), namespaces with the
// labels a test gives them, and a keeper that only counts what ADD holds.
import { silentLogger } from '@flock/api';
import { FakeApiServer } from '@flock/kube/testing';
import { ClaimBook } from '../src/claims/book.js';
import { fetchNodeReady } from '../src/claims/api-reads.js';
import type { FloatingClaims } from '../src/cni/deps.js';
import { fetchPod } from '../src/node/pods.js';

export interface TestClaims extends FloatingClaims {
  api: FakeApiServer;
  book: ClaimBook;
  /** Addresses an ADD holds right now. */
  held: Map<string, number>;
}

export function testClaims(
  options: {
    api?: FakeApiServer;
    nodeName?: string;
    /** Namespace name → its labels (default: none beyond its name). */
    namespaces?: Record<string, Record<string, string>>;
    handoverWaitMs?: number;
  } = {},
): TestClaims {
  const api = options.api ?? new FakeApiServer();
  const book = new ClaimBook({
    transport: api,
    nodeName: options.nodeName ?? 'node-a',
    logger: silentLogger,
    fetchPod: (namespace, name) => fetchPod(api, namespace, name),
    nodeReady: (name) => fetchNodeReady(api, name),
    handoverWaitMs: options.handoverWaitMs ?? 0,
    pollMs: 10,
  });
  const held = new Map<string, number>();
  return {
    api,
    book,
    held,
    keeper: {
      hold: (addresses) => {
        for (const a of addresses) held.set(a, (held.get(a) ?? 0) + 1);
        return () => {
          for (const a of addresses) held.set(a, (held.get(a) ?? 1) - 1);
        };
      },
    },
    namespace: async (name) => ({ name, labels: options.namespaces?.[name] ?? {} }),
  };
}
