// Pods: one cluster-wide pod cache (NetworkPolicy peers are every pod of the cluster), indexed
// by node; this node's pods are a view of it (spec.nodeName = this node) — one watch where
// there were two. And the lookup ADD uses: the view first, the API server when the cache has
// not seen the pod yet (the kubelet calls ADD right after the pod was bound) or holds an older
// pod of the same name.
import {
  ANYCAST_ANNOTATION,
  BGP_COMMUNITIES_ANNOTATION,
  CLAIM_KEY_ANNOTATION,
  CniErrorCode,
  IP_ALGO_ANNOTATION,
  PINNED_IP_ANNOTATION,
  Pod,
  type Logger,
} from '@flock/api';
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

/** The pod cache's index of pods by spec.nodeName. */
export const BY_NODE = 'node';

/** The pod annotations flock reads; any other (flock.fritzlab.net/* included) is not kept. */
const POD_ANNOTATIONS: ReadonlySet<string> = new Set([
  IP_ALGO_ANNOTATION,
  PINNED_IP_ANNOTATION,
  ANYCAST_ANNOTATION,
  BGP_COMMUNITIES_ANNOTATION,
  CLAIM_KEY_ANNOTATION,
]);
/**
 * Longest value of one of them that is kept (far above any valid one: the longest are the anycast
 * and community lists). A longer one is kept as OVERSIZE, which no parser accepts: the pod is
 * refused as with any bad annotation, and a namespace cannot make every agent hold its 256 KiB.
 */
export const MAX_ANNOTATION_BYTES = 4096;
export const OVERSIZE = '<over 4096 bytes: not kept by flock>';

/**
 * What the cache keeps of a pod: the fields flock reads (identity, labels, flock's own
 * annotations, its controller, node, named ports, phase, addresses, the Ready condition). Trimmed as it enters
 * the cache, so 10,000 pods cost a fraction of their objects (no managedFields, no
 * last-applied-configuration) and a change costs no re-parsing.
 */
export function trimPod(p: Pod): Pod {
  const m = p.metadata;
  const annotations = Object.entries(m.annotations ?? {})
    .filter(([k]) => POD_ANNOTATIONS.has(k))
    .map(([k, v]) => [k, v.length > MAX_ANNOTATION_BYTES ? OVERSIZE : v] as const);
  const ready = p.status?.conditions?.find((c) => c.type === 'Ready');
  const owner = (m.ownerReferences ?? []).find((r) => r['controller'] === true);
  const controller = owner
    ? { kind: owner['kind'], name: owner['name'], controller: true }
    : undefined;
  return {
    // Always (list items of built-in types carry neither): an Event about the pod needs its kind.
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: {
      name: m.name,
      namespace: m.namespace,
      ...(m.uid ? { uid: m.uid } : {}),
      ...(m.resourceVersion ? { resourceVersion: m.resourceVersion } : {}),
      ...(m.labels ? { labels: m.labels } : {}),
      ...(annotations.length ? { annotations: Object.fromEntries(annotations) } : {}),
      ...(m.deletionTimestamp ? { deletionTimestamp: m.deletionTimestamp } : {}),
      // The controller names the pod's claim key (claims/keys.ts); nothing else of the list.
      ...(controller ? { ownerReferences: [controller] } : {}),
    },
    spec: {
      ...(p.spec?.nodeName ? { nodeName: p.spec.nodeName } : {}),
      // The pod uses the node's addresses: not a pod peer (see docs).
      ...(p.spec?.hostNetwork === true ? { hostNetwork: true } : {}),
      containers: (p.spec?.containers ?? []).map((c) => ({
        ports: (c.ports ?? []).map((port) => ({
          ...(port.name ? { name: port.name } : {}),
          containerPort: port.containerPort,
          ...(port.protocol ? { protocol: port.protocol } : {}),
        })),
      })),
    },
    status: {
      ...(p.status?.phase ? { phase: p.status.phase } : {}),
      ...(p.status?.podIP ? { podIP: p.status.podIP } : {}),
      ...(p.status?.podIPs ? { podIPs: p.status.podIPs.map((i) => ({ ip: i.ip })) } : {}),
      ...(ready ? { conditions: [{ type: ready.type, status: ready.status }] } : {}),
    },
  };
}

/** A pod as the cache holds it: parsed, then trimmed. */
export const CachedPod = Pod.transform(trimPod);

/** Every pod of the cluster, by node (BY_NODE). */
export function clusterPodCache(
  transport: KubeTransport,
  logger: Logger,
  watchdogMs?: number,
  metrics?: MetricsOptions,
): Cache<Pod> {
  return new Cache<Pod>({
    source: resourceListWatch(transport, PODS),
    schema: CachedPod,
    name: 'pods',
    indexers: { [BY_NODE]: (p) => (p.spec?.nodeName ? [p.spec.nodeName] : []) },
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
