// Pods: this node's pods in a cache (spec.nodeName = this node), and the lookup ADD uses —
// the cache first, the API server when the cache has not seen the pod yet (the kubelet calls
// ADD right after the pod was bound) or holds an older pod of the same name.
import type { Logger } from '@flock/api';
import {
  Cache,
  PODS,
  formatFieldSelector,
  isNotFound,
  objectPath,
  resourceListWatch,
  type KubeObject,
  type KubeTransport,
} from '@flock/kube';
import type { V1Pod } from '@kubernetes/client-node';
import type { PodLookup } from './cni/handlers.js';

/** A Pod as the caches hold it (metadata always present). */
export type Pod = V1Pod & KubeObject;

export function nodePodCache(
  transport: KubeTransport,
  nodeName: string,
  logger: Logger,
): Cache<Pod> {
  return new Cache<Pod>({
    source: resourceListWatch(transport, PODS),
    fieldSelector: formatFieldSelector({ 'spec.nodeName': nodeName }),
    logger,
  });
}

export class PodLookupWithFallback implements PodLookup {
  constructor(
    private readonly cache: Cache<Pod>,
    private readonly transport: KubeTransport,
  ) {}

  async get(namespace: string, name: string, uid?: string): Promise<V1Pod | undefined> {
    const cached = this.cache.getObject(name, namespace);
    if (cached && (!uid || cached.metadata?.uid === uid)) return cached;
    try {
      return (await this.transport.request({
        method: 'GET',
        path: objectPath(PODS, name, namespace),
      })) as V1Pod;
    } catch (error) {
      if (isNotFound(error)) return undefined;
      throw error;
    }
  }
}

/** Is the pod Ready (its Ready condition True)? */
export function isPodReady(pod: V1Pod): boolean {
  return pod.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True') ?? false;
}
