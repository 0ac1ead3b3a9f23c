// Writes with explicit content types: server-side apply (application/apply-patch+yaml with a
// field manager), JSON merge patches, and both of them on the /status subresource. The API
// server decides what a PATCH means by its Content-Type alone, so it is never left to a default.
import { apiVersionOf, objectPath, type KubeObject, type ResourceRef } from '../core/resource.js';
import { PatchStrategy, type KubeTransport } from '../transport/transport.js';

interface ApplyOptions {
  /** Who owns the applied fields, e.g. "flock-operator". */
  fieldManager: string;
  /** Take over fields owned by other managers instead of failing with 409 (default true). */
  force?: boolean;
  signal?: AbortSignal;
}

export interface PatchStatusOptions {
  /** Field manager (required by apply; recorded in managedFields for merge). */
  fieldManager: string;
  /** 'apply' (default): server-side apply of the status; 'merge': JSON merge patch. */
  mode?: 'apply' | 'merge';
  /** Merge only: fail with 409 unless the object is still at this version. */
  resourceVersion?: string;
  /** Apply only (default true). */
  force?: boolean;
  signal?: AbortSignal;
}

function nameOf(obj: KubeObject): { name: string; namespace?: string } {
  const { name, namespace } = obj.metadata;
  if (!name) throw new Error('object to apply has no metadata.name');
  return namespace ? { name, namespace } : { name };
}

/**
 * Server-side apply `obj` (creates it if missing). `obj` is the full intent of `fieldManager`:
 * fields it applied before and leaves out now are removed. Resolves with the object as stored.
 */
export async function applyObject(
  transport: KubeTransport,
  resource: ResourceRef,
  obj: KubeObject,
  options: ApplyOptions,
): Promise<unknown> {
  const { name, namespace } = nameOf(obj);
  const apiVersion = apiVersionOf(resource);
  if (
    (obj.apiVersion ?? apiVersion) !== apiVersion ||
    (obj.kind ?? resource.kind) !== resource.kind
  ) {
    throw new Error(
      `cannot apply ${obj.apiVersion ?? ''} ${obj.kind ?? ''} ${name} as ${apiVersion} ${resource.kind}`,
    );
  }
  return transport.request({
    method: 'PATCH',
    path: objectPath(resource, name, namespace),
    query: { fieldManager: options.fieldManager, force: options.force ?? true },
    contentType: PatchStrategy.ServerSideApply,
    body: { ...obj, apiVersion, kind: resource.kind },
    ...(options.signal ? { signal: options.signal } : {}),
  });
}

/** JSON merge patch (RFC 7386) of an object; null values delete fields. */
export async function mergePatch(
  transport: KubeTransport,
  resource: ResourceRef,
  name: string,
  namespace: string | undefined,
  patch: Record<string, unknown>,
  options: { fieldManager?: string; subresource?: string; signal?: AbortSignal } = {},
): Promise<unknown> {
  return transport.request({
    method: 'PATCH',
    path: objectPath(resource, name, namespace, options.subresource),
    query: { fieldManager: options.fieldManager },
    contentType: PatchStrategy.MergePatch,
    body: patch,
    ...(options.signal ? { signal: options.signal } : {}),
  });
}

/** Write `status` through the /status subresource (the main resource ignores status). */
export async function patchStatus(
  transport: KubeTransport,
  resource: ResourceRef,
  name: string,
  namespace: string | undefined,
  status: unknown,
  options: PatchStatusOptions,
): Promise<unknown> {
  if ((options.mode ?? 'apply') === 'merge') {
    const metadata = options.resourceVersion
      ? { resourceVersion: options.resourceVersion }
      : undefined;
    return mergePatch(
      transport,
      resource,
      name,
      namespace,
      { ...(metadata ? { metadata } : {}), status },
      {
        fieldManager: options.fieldManager,
        subresource: 'status',
        ...(options.signal ? { signal: options.signal } : {}),
      },
    );
  }
  return transport.request({
    method: 'PATCH',
    path: objectPath(resource, name, namespace, 'status'),
    query: { fieldManager: options.fieldManager, force: options.force ?? true },
    contentType: PatchStrategy.ServerSideApply,
    body: {
      apiVersion: apiVersionOf(resource),
      kind: resource.kind,
      metadata: { name, ...(namespace ? { namespace } : {}) },
      status,
    },
    ...(options.signal ? { signal: options.signal } : {}),
  });
}
