// Is a resource served by the API server? For optional CRDs (e.g. sig-network's
// ClusterNetworkPolicy). Asked of discovery (GET /apis/<group>/<version>), which every
// authenticated client may read (system:discovery): the answer does not depend on the caller's
// RBAC for the resource, and no object is transferred.
import { z } from 'zod';
import { isNotFound } from '../core/errors.js';
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
