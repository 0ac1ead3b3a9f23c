// Is a resource served by the API server? For optional CRDs (e.g. sig-network's
// ClusterNetworkPolicy). Asked of discovery (GET /apis/<group>/<version>), which every
// authenticated client may read (system:discovery): the answer does not depend on the caller's
// RBAC for the resource, and no object is transferred.
import { z } from 'zod';
import { errorMessage, isNotFound } from '../core/errors.js';
import type { Logger } from '../core/logger.js';
import type { ResourceRef } from '../core/resource.js';
import type { KubeTransport } from '../transport/transport.js';

/** The part of an APIResourceList this reads. */
const ResourceList = z.looseObject({
  resources: z.array(z.looseObject({ name: z.string() })),
});

/** Discovery path of a resource's group/version: /api/v1 or /apis/<group>/<version>. */
export function groupVersionPath(ref: Pick<ResourceRef, 'group' | 'version'>): string {
  const parts = ref.group ? ['apis', ref.group, ref.version] : ['api', ref.version];
  return '/' + parts.map(encodeURIComponent).join('/');
}

/**
 * True when the group/version is served and lists the resource; false when it is not served
 * (404) or does not list it; other errors (unreachable, 5xx) reject.
 */
export async function resourceServed(transport: KubeTransport, ref: ResourceRef): Promise<boolean> {
  let answer: unknown;
  try {
    answer = await transport.request({ method: 'GET', path: groupVersionPath(ref) });
  } catch (error) {
    if (isNotFound(error)) return false;
    throw error;
  }
  return ResourceList.parse(answer).resources.some((r) => r.name === ref.plural);
}

export interface WhenServedOptions {
  transport: KubeTransport;
  ref: ResourceRef;
  logger: Logger;
  /** Logged once, at info, the first time the resource is found not served. */
  absentMessage: string;
  /** Ask again this often while the resource is not served (default 60 s). */
  recheckMs?: number;
  /** After an error (neither served nor 404), ask again after this long (default 5 s). */
  retryMs?: number;
  /** Each definite "not served" answer. */
  onAbsent?: () => void;
  /** The resource is served: called once, and the probing ends. */
  onServed: () => void;
}

/**
 * Ask discovery whether an optional resource is served, now and then every `recheckMs` until
 * it is; `onServed` runs once when it is. "Cannot tell" (unreachable, 5xx) is logged and asked
 * again after `retryMs`, never taken for "not installed". `stop()` ends the probing.
 */
export function whenServed(options: WhenServedOptions): { stop(): void } {
  const { transport, ref, logger } = options;
  const recheckMs = options.recheckMs ?? 60_000;
  const what = `${ref.plural}.${ref.group || 'core'}/${ref.version}`;
  let stopped = false;
  let loggedAbsent = false;
  let timer: ReturnType<typeof setTimeout> | undefined;
  const later = (ms: number) => {
    if (!stopped) timer = setTimeout(() => void probe(), ms);
  };
  const probe = async () => {
    let served: boolean;
    try {
      served = await resourceServed(transport, ref);
    } catch (error) {
      logger.warn(`cannot tell whether ${what} is served`, { error: errorMessage(error) });
      later(options.retryMs ?? 5_000);
      return;
    }
    if (stopped) return;
    if (served) {
      options.onServed();
      return;
    }
    if (!loggedAbsent) logger.info(options.absentMessage, { recheckMs });
    loggedAbsent = true;
    options.onAbsent?.();
    later(recheckMs);
  };
  void probe();
  return {
    stop() {
      stopped = true;
      clearTimeout(timer);
    },
  };
}
