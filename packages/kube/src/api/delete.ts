// Delete an object as it was read: with its uid and resourceVersion as preconditions, so that a
// writer that changed it meanwhile (or a new object of the same name) wins with a 409 and the
// caller reads again.
import { isNotFound } from '../core/errors.js';
import { objectPath, type ResourceRef } from '../core/resource.js';
import type { KubeTransport } from '../transport/transport.js';

export interface DeleteOptions {
  namespace?: string;
  /** Only delete this incarnation (409 if the object was recreated meanwhile). */
  uid?: string;
  /** Only delete if unchanged since this version (409 otherwise). */
  resourceVersion?: string;
  signal?: AbortSignal;
}

/** Delete; false if it did not exist. */
export async function deleteObject(
  transport: KubeTransport,
  resource: ResourceRef,
  name: string,
  options: DeleteOptions = {},
): Promise<boolean> {
  const preconditions = {
    ...(options.uid ? { uid: options.uid } : {}),
    ...(options.resourceVersion ? { resourceVersion: options.resourceVersion } : {}),
  };
  try {
    await transport.request({
      method: 'DELETE',
      path: objectPath(resource, name, options.namespace),
      body: { apiVersion: 'v1', kind: 'DeleteOptions', preconditions },
      ...(options.signal ? { signal: options.signal } : {}),
    });
    return true;
  } catch (err) {
    if (isNotFound(err)) return false;
    throw err;
  }
}
