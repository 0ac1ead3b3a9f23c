// The one seam between flock and an API server: JSON requests and watch streams by REST path.
// HttpTransport speaks to a real API server; FakeApiServer (@flock/kube/testing) is the
// in-memory twin that unit tests use. Everything else in this package is written against this.
import { z } from 'zod';

export type HttpMethod = 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';

/** The Content-Types that tell the API server what a PATCH means. */
export const PatchStrategy = {
  JsonPatch: 'application/json-patch+json',
  MergePatch: 'application/merge-patch+json',
  StrategicMergePatch: 'application/strategic-merge-patch+json',
  ServerSideApply: 'application/apply-patch+yaml',
} as const;
export type PatchStrategy = (typeof PatchStrategy)[keyof typeof PatchStrategy];
export type Query = Record<string, string | number | boolean | undefined>;

export interface KubeRequest {
  method: HttpMethod;
  /** Absolute API path, e.g. /apis/coordination.k8s.io/v1/namespaces/ns/leases/x. */
  path: string;
  query?: Query;
  /** Sent as JSON (JSON is valid YAML, so also for application/apply-patch+yaml). */
  body?: unknown;
  /** Content-Type of the body (default application/json); PATCH must name its patch type. */
  contentType?: string;
  /** Abort the request (the transport also applies its own timeout). */
  signal?: AbortSignal;
}

export const WatchEventSchema = z.object({
  type: z.enum(['ADDED', 'MODIFIED', 'DELETED', 'BOOKMARK', 'ERROR']),
  object: z.looseObject({}),
});
/** One line of a watch stream. For ERROR, `object` is a Status. */
export type WatchEvent = z.infer<typeof WatchEventSchema>;

export interface WatchRequest {
  path: string;
  query?: Query;
}

export interface KubeTransport {
  /** Send a request; resolves with the parsed JSON body, rejects with KubeApiError on non-2xx. */
  request(req: KubeRequest): Promise<unknown>;
  /**
   * Open a watch (`watch=true` is added). Events arrive in order through `onEvent`; `onDone` is
   * called exactly once when the stream ends (no argument: closed by the server; an error:
   * failed), unless the returned abort function was called first — after abort, neither
   * callback is called again.
   */
  watch(
    req: WatchRequest,
    onEvent: (event: WatchEvent) => void,
    onDone: (err?: unknown) => void,
  ): () => void;
}
