// Errors shared by every part of the runtime: API errors carry the HTTP code and the server's
// Status reason, so callers branch on `isNotFound(e)` instead of parsing messages.
import { z } from 'zod';

/** The `Status` object the API server returns with every error. */
export const StatusSchema = z.looseObject({
  kind: z.literal('Status').optional(),
  status: z.string().optional(),
  message: z.string().optional(),
  reason: z.string().optional(),
  code: z.number().optional(),
  details: z.looseObject({}).optional(),
});
export type Status = z.infer<typeof StatusSchema>;

/** An error answer of the API server (non-2xx, or an ERROR event in a watch). */
export class KubeApiError extends Error {
  constructor(
    /** HTTP status code (404, 409, 410, ...). */
    readonly code: number,
    /** The Status reason (NotFound, Conflict, Expired, ...), empty if the server gave none. */
    readonly reason: string,
    message: string,
    readonly status?: Status,
  ) {
    super(message);
    this.name = 'KubeApiError';
  }

  /** Build from an HTTP status code and the response body (a Status when the server sent one). */
  static fromResponse(code: number, body: unknown, what: string): KubeApiError {
    const parsed = StatusSchema.safeParse(body);
    const status = parsed.success ? parsed.data : undefined;
    const detail = status?.message ?? (typeof body === 'string' ? body.slice(0, 500) : '');
    return new KubeApiError(
      code,
      status?.reason ?? '',
      `${what}: ${code}${detail ? ` ${detail}` : ''}`,
      status,
    );
  }
}

/** A reconcile error that retrying cannot fix: the controller logs it and does not requeue. */
export class TerminalError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'TerminalError';
  }
}

export const apiErrorCode = (e: unknown): number | undefined =>
  e instanceof KubeApiError ? e.code : undefined;
export const isNotFound = (e: unknown): boolean => apiErrorCode(e) === 404;
/** 410 Gone / reason Expired: a resourceVersion or continue token is too old; relist. */
export const isGone = (e: unknown): boolean =>
  apiErrorCode(e) === 410 || (e instanceof KubeApiError && e.reason === 'Expired');

/** A one-line description of anything thrown, for logs. */
export function errorMessage(e: unknown): string {
  if (e instanceof Error) return e.message || e.name;
  if (typeof e === 'string') return e;
  try {
    return JSON.stringify(e);
  } catch {
    return String(e);
  }
}
