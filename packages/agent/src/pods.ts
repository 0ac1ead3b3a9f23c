// Pods: this node's pods in a cache (spec.nodeName = this node), and the lookup ADD uses —
// the cache first, the API server when the cache has not seen the pod yet (the kubelet calls
// ADD right after the pod was bound) or holds an older pod of the same name.
import { CniErrorCode, Pod, type Logger } from '@flock/api';
import {
  Cache,
  PODS,
  formatFieldSelector,
  isNotFound,
  objectPath,
  resourceListWatch,
  type KubeTransport,
  type MetricsOptions,
} from '@flock/kube';
import { canonicalAddress } from '@flock/ipam';
import type { PodLookup } from './cni/handlers.js';
import { CniCommandError } from './cni/errors.js';
import { podAddresses } from './cni/pod-request.js';

/** Pods that may still hold their addresses (a terminated pod's may be reused). */
const NOT_TERMINATED = formatFieldSelector([
  { field: 'status.phase', op: '!=', value: 'Succeeded' },
  { field: 'status.phase', op: '!=', value: 'Failed' },
]);
const HOLDERS_PAGE = 500;

export function nodePodCache(
  transport: KubeTransport,
  nodeName: string,
  logger: Logger,
  watchdogMs?: number,
  metrics?: MetricsOptions,
): Cache<Pod> {
  return new Cache<Pod>({
    source: resourceListWatch(transport, PODS),
    schema: Pod,
    name: 'node-pods',
    ...(metrics ? { metrics } : {}),
    fieldSelector: formatFieldSelector({ 'spec.nodeName': nodeName }),
    logger,
    ...(watchdogMs ? { watchdogMs } : {}),
  });
}

export class PodLookupWithFallback implements PodLookup {
  constructor(
    private readonly cache: Cache<Pod>,
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

  /**
   * The API server selects pods by their primary address only (status.podIP), so a pinned
   * IPv4 address behind an IPv6 primary — or the other way round — is found by reading every
   * pod that has not terminated, a page at a time (only the matches are kept). Only an ADD of
   * a pod with a pinned address pays for it.
   */
  async holdersOf(ips: readonly string[]): Promise<Pod[]> {
    const wanted = new Set(ips.map((ip) => canonicalAddress(ip) ?? ip));
    const source = resourceListWatch(this.transport, PODS);
    const out: Pod[] = [];
    let token: string | undefined;
    try {
      do {
        const page = await source.list({
          limit: HOLDERS_PAGE,
          fieldSelector: NOT_TERMINATED,
          ...(token ? { continue: token } : {}),
        });
        for (const pod of page.items.map((item) => Pod.parse(item)))
          if (podAddresses(pod).some((ip) => wanted.has(ip))) out.push(pod);
        token = page.continue;
      } while (token);
    } catch (error) {
      throw new CniCommandError(
        CniErrorCode.TryAgainLater,
        `cannot check who holds pinned address ${ips.join(', ')}: the API server did not answer (${errorText(error)}); try again later`,
      );
    }
    return out;
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
