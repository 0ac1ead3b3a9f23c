// A typed client: read, apply, patch status and delete objects of one resource, with every
// object that is read back parsed by its zod schema. flock/clients.ts makes the Pool and
// NodeConfig ones.
import type { z } from 'zod';
import { applyObject, patchStatus, type PatchStatusOptions } from './apply.js';
import { errorMessage, isNotFound } from '../core/errors.js';
import { resourceListWatch, type ListWatchSource } from '../informer/listwatch-source.js';
import type { Logger } from '../core/logger.js';
import { objectKey, objectPath } from '../core/resource.js';
import type { KubeObject, ResourceRef } from '../core/resource.js';
import { deleteObject, type DeleteOptions } from './delete.js';
import type { KubeTransport } from '../transport/transport.js';

/** An object the API server returned that does not satisfy the schema. */
export class InvalidObjectError extends Error {
  constructor(
    readonly key: string,
    readonly issues: string,
  ) {
    super(`invalid object ${key}: ${issues}`);
    this.name = 'InvalidObjectError';
  }
}

interface ResourceClientOptions<T> {
  transport: KubeTransport;
  resource: ResourceRef;
  schema: z.ZodType<T>;
  /** Field manager of apply and status writes, e.g. "flock-operator". */
  fieldManager: string;
  /** Told about invalid objects that list() skips. */
  logger: Logger;
}

interface ListFilter {
  namespace?: string;
  labelSelector?: string;
  fieldSelector?: string;
  signal?: AbortSignal;
}

export class ResourceClient<
  T extends KubeObject,
  Status = unknown,
  ApplyInput extends KubeObject = KubeObject,
> {
  constructor(private readonly options: ResourceClientOptions<T>) {}

  get resource(): ResourceRef {
    return this.options.resource;
  }

  /** A list/watch source for a Cache of this resource. */
  listWatch(namespace?: string): ListWatchSource {
    return resourceListWatch(
      this.options.transport,
      this.options.resource,
      namespace ? { namespace } : {},
    );
  }

  /** Every object (all pages); invalid objects are logged and left out. */
  async list(filter: ListFilter = {}): Promise<T[]> {
    const source = this.listWatch(filter.namespace);
    const out: T[] = [];
    let token: string | undefined;
    do {
      const page = await source.list({
        limit: 500,
        ...(token ? { continue: token } : {}),
        ...(filter.labelSelector ? { labelSelector: filter.labelSelector } : {}),
        ...(filter.fieldSelector ? { fieldSelector: filter.fieldSelector } : {}),
        ...(filter.signal ? { signal: filter.signal } : {}),
      });
      for (const item of page.items) {
        try {
          out.push(this.parse(item));
        } catch (err) {
          this.options.logger.error('invalid object skipped', { err: errorMessage(err) });
        }
      }
      token = page.continue;
    } while (token);
    return out;
  }

  /** The object, or undefined if it does not exist. */
  async get(
    name: string,
    options: { namespace?: string; signal?: AbortSignal } = {},
  ): Promise<T | undefined> {
    try {
      return this.parse(
        await this.options.transport.request({
          method: 'GET',
          path: objectPath(this.options.resource, name, options.namespace),
          ...(options.signal ? { signal: options.signal } : {}),
        }),
      );
    } catch (err) {
      if (isNotFound(err)) return undefined;
      throw err;
    }
  }

  /** Server-side apply (force by default); resolves with the stored object. */
  async apply(
    obj: ApplyInput,
    options: { force?: boolean; signal?: AbortSignal } = {},
  ): Promise<T> {
    return this.parse(
      await applyObject(this.options.transport, this.options.resource, obj, {
        fieldManager: this.options.fieldManager,
        ...options,
      }),
    );
  }

  /** Write the status subresource (apply by default; or a merge patch). */
  async patchStatus(
    name: string,
    status: Status,
    options: Omit<PatchStatusOptions, 'fieldManager'> & { namespace?: string } = {},
  ): Promise<T> {
    const { namespace, ...rest } = options;
    return this.parse(
      await patchStatus(this.options.transport, this.options.resource, name, namespace, status, {
        fieldManager: this.options.fieldManager,
        ...rest,
      }),
    );
  }

  /** Delete; false if it did not exist. */
  delete(name: string, options: DeleteOptions = {}): Promise<boolean> {
    return deleteObject(this.options.transport, this.options.resource, name, options);
  }

  private parse(raw: unknown): T {
    const result = this.options.schema.safeParse(raw);
    if (result.success) return result.data;
    let key = '?';
    try {
      key = objectKey(raw as KubeObject);
    } catch {
      /* no name: keep '?' */
    }
    throw new InvalidObjectError(
      `${this.options.resource.plural}/${key}`,
      result.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; '),
    );
  }
}
