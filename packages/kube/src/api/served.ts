// Is a resource served by the API server? For optional CRDs (e.g. sig-network's
// ClusterNetworkPolicy): a LIST of at most one object answers, with the caller's own RBAC.
import { isNotFound } from '../core/errors.js';
import { resourcePath, type ResourceRef } from '../core/resource.js';
import type { KubeTransport } from '../transport/transport.js';

/** True when served, false on 404 (no such group/version/resource); other errors reject. */
export async function resourceServed(transport: KubeTransport, ref: ResourceRef): Promise<boolean> {
  try {
    await transport.request({ method: 'GET', path: resourcePath(ref), query: { limit: 1 } });
    return true;
  } catch (error) {
    if (isNotFound(error)) return false;
    throw error;
  }
}
