// Where leader election keeps its lock: a coordination.k8s.io/v1 Lease, read and written with
// optimistic concurrency (an update carries the resourceVersion it read; a concurrent writer
// makes it fail with 409 Conflict instead of silently overwriting).
import { z } from 'zod';
import { KubeApiError } from '../core/errors.js';
import {
  apiVersionOf,
  assertPathSegment,
  LEASES,
  objectPath,
  resourcePath,
} from '../core/resource.js';
import type { KubeTransport } from '../transport/transport.js';

export interface LeaseSpec {
  holderIdentity?: string;
  leaseDurationSeconds?: number;
  /** RFC 3339 with microseconds (MicroTime). */
  acquireTime?: string;
  renewTime?: string;
  leaseTransitions?: number;
}

export interface LeaseRecord {
  spec: LeaseSpec;
  resourceVersion: string;
}

export interface LeaseStore {
  /** For logs, e.g. "flock-system/flock-operator". */
  readonly description: string;
  /** The lease, or undefined if it does not exist. */
  get(signal?: AbortSignal): Promise<LeaseRecord | undefined>;
  /** Create it; fails with 409 AlreadyExists if someone else did first. */
  create(spec: LeaseSpec, signal?: AbortSignal): Promise<LeaseRecord>;
  /** Replace the spec of the version `current` was read at; fails with 409 on a concurrent write. */
  update(current: LeaseRecord, spec: LeaseSpec, signal?: AbortSignal): Promise<LeaseRecord>;
}

const LeaseSchema = z.looseObject({
  metadata: z.looseObject({ resourceVersion: z.string().min(1) }),
  spec: z
    .looseObject({
      holderIdentity: z.string().nullish(),
      leaseDurationSeconds: z.number().int().nullish(),
      acquireTime: z.string().nullish(),
      renewTime: z.string().nullish(),
      leaseTransitions: z.number().int().nullish(),
    })
    .nullish(),
});

function toRecord(raw: unknown): LeaseRecord {
  const lease = LeaseSchema.parse(raw);
  const s = lease.spec ?? {};
  const spec: LeaseSpec = {};
  if (s.holderIdentity) spec.holderIdentity = s.holderIdentity;
  if (s.leaseDurationSeconds != null) spec.leaseDurationSeconds = s.leaseDurationSeconds;
  if (s.acquireTime) spec.acquireTime = s.acquireTime;
  if (s.renewTime) spec.renewTime = s.renewTime;
  if (s.leaseTransitions != null) spec.leaseTransitions = s.leaseTransitions;
  return { spec, resourceVersion: lease.metadata.resourceVersion };
}

/** A LeaseStore over the API (real or fake). */
export function kubeLeaseStore(
  transport: KubeTransport,
  namespace: string,
  name: string,
): LeaseStore {
  assertPathSegment('lease namespace', namespace);
  assertPathSegment('lease name', name);
  const path = objectPath(LEASES, name, namespace);
  const object = (spec: LeaseSpec, resourceVersion?: string) => ({
    apiVersion: apiVersionOf(LEASES),
    kind: LEASES.kind,
    metadata: { name, namespace, ...(resourceVersion ? { resourceVersion } : {}) },
    spec,
  });
  const withSignal = (signal?: AbortSignal) => (signal ? { signal } : {});
  return {
    description: `${namespace}/${name}`,
    async get(signal) {
      try {
        return toRecord(await transport.request({ method: 'GET', path, ...withSignal(signal) }));
      } catch (err) {
        if (err instanceof KubeApiError && err.code === 404) return undefined;
        throw err;
      }
    },
    async create(spec, signal) {
      const raw = await transport.request({
        method: 'POST',
        path: resourcePath(LEASES, { namespace }),
        body: object(spec),
        ...withSignal(signal),
      });
      return toRecord(raw);
    },
    async update(current, spec, signal) {
      const raw = await transport.request({
        method: 'PUT',
        path,
        body: object(spec, current.resourceVersion),
        ...withSignal(signal),
      });
      return toRecord(raw);
    },
  };
}

/** Kubernetes MicroTime: RFC 3339 with exactly six fractional digits. */
export function microTime(ms: number): string {
  return new Date(ms).toISOString().replace(/\.(\d{3})Z$/, '.$1000Z');
}
