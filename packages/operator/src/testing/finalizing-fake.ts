// Finalizers on top of the in-memory API server (which deletes at once): a DELETE of a
// NodeConfig that has finalizers only sets its deletionTimestamp, and the write that removes
// the last finalizer of such an object deletes it — what the real API server does. The
// cluster tier runs the same operator code on the real thing.
import { KubeApiError, NODECONFIGS, type KubeRequest, type KubeTransport } from '@flock/kube';
import type { FakeApiServer } from '@flock/kube/testing';

interface Meta {
  uid?: string;
  finalizers?: string[];
  deletionTimestamp?: string;
}

const PREFIX = '/apis/flock.fritzlab.net/v1alpha1/nodeconfigs/';

/** `via`: the connection requests take (e.g. a FakeClient that can be partitioned). */
export function withFinalizers(server: FakeApiServer, via: KubeTransport = server): KubeTransport {
  const nameOf = (req: KubeRequest) => {
    if (!req.path.startsWith(PREFIX)) return undefined;
    const rest = req.path.slice(PREFIX.length);
    return rest && !rest.includes('/') ? decodeURIComponent(rest) : undefined;
  };
  return {
    async request(req) {
      const name = nameOf(req);
      if (name && req.method === 'DELETE') {
        const cur = server.getObject<{ metadata: Meta }>(NODECONFIGS, name);
        if (cur && (cur.metadata.finalizers ?? []).length > 0) {
          await via.request({ method: 'GET', path: req.path }); // same network as the rest
          const uid = (req.body as { preconditions?: { uid?: string } } | undefined)?.preconditions
            ?.uid;
          if (uid && uid !== cur.metadata.uid) {
            throw new KubeApiError(409, 'Conflict', `Precondition failed: uid ${uid}`);
          }
          if (cur.metadata.deletionTimestamp) return cur;
          const deletionTimestamp = new Date(server.clock.now())
            .toISOString()
            .replace(/\.\d{3}Z$/, 'Z');
          return server.putObject(NODECONFIGS, {
            ...cur,
            metadata: { ...cur.metadata, deletionTimestamp },
          } as never);
        }
      }
      const result = (await via.request(req)) as { metadata?: Meta } | undefined;
      const meta = result?.metadata;
      if (
        name &&
        req.method !== 'GET' &&
        meta?.deletionTimestamp &&
        (meta.finalizers ?? []).length === 0
      ) {
        server.deleteObject(NODECONFIGS, name);
      }
      return result;
    },
    watch: (req, onEvent, onDone) => via.watch(req, onEvent, onDone),
  };
}
