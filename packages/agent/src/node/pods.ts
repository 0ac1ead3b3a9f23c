// Pods: this node's pod cache (a watch of its own pods) when NetworkPolicy peers come from the
// operator's PeerSlices; else one cluster-wide pod cache (peers are every pod of the cluster),
// indexed by node, and this node's pods a view of it — one watch where there were two. And the lookup ADD uses: the view first, the API server when the cache has
// not seen the pod yet (the kubelet calls ADD right after the pod was bound) or holds an older
// pod of the same name.
import { CniErrorCode, Pod, type Logger } from '@flock/api';
import {
  Cache,
  CacheView,
  PODS,
  isNotFound,
  objectPath,
  resourceListWatch,
  type KubeTransport,
  type MetricsOptions,
} from '@flock/kube';
import { CniCommandError } from '../core/cni-error.js';
import { CachedPod } from './pod-trim.js';

export {
  CachedPod,
  MAX_ANNOTATION_BYTES,
  MAX_NAMED_PORTS,
  MAX_POD_LABELS,
  OVERSIZE,
  OVER_LIMIT_LABEL,
  overLimit,
  trimPod,
} from './pod-trim.js';

/** The pod cache's index of pods by spec.nodeName. */
export const BY_NODE = 'node';

/**
 * Every pod of the cluster, by node (BY_NODE). With `onlyNode`, the index holds that node's pods
 * alone: the agent asks for no other, and an index entry for each of 150,000 pods is ≈ 4 MiB.
 */
export function clusterPodCache(
  transport: KubeTransport,
  logger: Logger,
  watchdogMs?: number,
  metrics?: MetricsOptions,
  onlyNode?: string,
): Cache<Pod> {
  const node = (p: Pod) => p.spec?.nodeName;
  return new Cache<Pod>({
    source: resourceListWatch(transport, PODS),
    schema: CachedPod,
    name: 'pods',
    indexers: {
      [BY_NODE]:
        onlyNode === undefined
          ? (p) => (node(p) ? [node(p) as string] : [])
          : (p) => (node(p) === onlyNode ? [onlyNode] : []),
    },
    ...(metrics ? { metrics } : {}),
    logger,
    ...(watchdogMs ? { watchdogMs } : {}),
  });
}

/**
 * This node's pods alone (a watch of spec.nodeName = the node), by node (BY_NODE) as the
 * cluster-wide cache is: with PeerSlices for the peers on other nodes, the agent needs no other.
 */
export function ownPodCache(
  transport: KubeTransport,
  logger: Logger,
  nodeName: string,
  watchdogMs?: number,
  metrics?: MetricsOptions,
): Cache<Pod> {
  return new Cache<Pod>({
    source: resourceListWatch(transport, PODS),
    schema: CachedPod,
    name: 'pods',
    fieldSelector: `spec.nodeName=${nodeName}`,
    indexers: { [BY_NODE]: (p) => (p.spec?.nodeName === nodeName ? [nodeName] : []) },
    ...(metrics ? { metrics } : {}),
    logger,
    ...(watchdogMs ? { watchdogMs } : {}),
  });
}

/**
 * Run `begin` once this node's pod cache has synced: at once (awaited) when it has, else in the
 * background when it does, with a warning naming what waits. Nothing may act on the cache
 * before: an empty cache looks like "every pod is gone" (agent start-up waits for the sync,
 * bounded, before it starts what calls this).
 */
export async function whenSynced(
  pods: Pick<CacheView<Pod>, 'hasSynced' | 'synced'>,
  begin: () => Promise<void>,
  options: { logger: Logger; waiting: string },
): Promise<void> {
  if (pods.hasSynced) return begin();
  options.logger.warn(`the pod cache has not synced: ${options.waiting} wait for it`);
  // Stopped before it synced: nothing to begin. begin() reports its own failures; a throw is
  // logged here so it cannot go unhandled.
  void pods.synced
    .then(begin, () => undefined)
    .catch((error: unknown) =>
      options.logger.error(`${options.waiting}: start failed`, { error: String(error) }),
    );
}

/** This node's pods: the cluster-wide cache's by-node view. */
export function nodePods(pods: Cache<Pod>, nodeName: string): CacheView<Pod> {
  return new CacheView(pods, BY_NODE, nodeName);
}

/** Where ADD finds the Pod object (the node's pod cache, falling back to the API server). */
export interface PodLookup {
  get(namespace: string, name: string, uid?: string): Promise<Pod | undefined>;
}

export class PodLookupWithFallback implements PodLookup {
  constructor(
    private readonly cache: Pick<CacheView<Pod>, 'getObject'>,
    private readonly transport: KubeTransport,
  ) {}

  async get(namespace: string, name: string, uid?: string): Promise<Pod | undefined> {
    const cached = this.cache.getObject(name, namespace);
    if (cached && (!uid || cached.metadata.uid === uid)) return cached;
    try {
      return await fetchPod(this.transport, namespace, name);
    } catch (error) {
      // Transient (the API server is restarting or unreachable): the runtime retries the ADD.
      throw new CniCommandError(
        CniErrorCode.TryAgainLater,
        `cannot look up pod ${namespace}/${name}: the API server did not answer (${errorText(error)}); try again later`,
      );
    }
  }
}

function errorText(error: unknown): string {
  const cause =
    error instanceof Error && error.cause instanceof Error ? `: ${error.cause.message}` : '';
  return error instanceof Error ? `${error.message}${cause}` : String(error);
}

/** The pod from the API server, parsed; undefined when there is none. */
export async function fetchPod(
  transport: KubeTransport,
  namespace: string,
  name: string,
): Promise<Pod | undefined> {
  try {
    return Pod.parse(
      await transport.request({ method: 'GET', path: objectPath(PODS, name, namespace) }),
    );
  } catch (error) {
    if (isNotFound(error)) return undefined;
    throw error;
  }
}
