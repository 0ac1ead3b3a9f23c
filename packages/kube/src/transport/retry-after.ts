// "Try again later" answers of the API server: 429 Too Many Requests (API Priority and
// Fairness, max-in-flight limits, a server shutting down) and a 5xx with a Retry-After header.
// Like client-go, the transport waits as long as the server asks — within bounds — and sends
// the request again, instead of failing it at once.

/** How often one request is sent again after "try later", and the longest wait honoured. */
export interface RetryAfterLimits {
  retries: number;
  maxWaitMs: number;
}

export const DEFAULT_RETRY_AFTER: RetryAfterLimits = { retries: 3, maxWaitMs: 10_000 };

/** Without (or with an unreadable) Retry-After, a 429 waits this long. */
const DEFAULT_WAIT_MS = 1000;

/**
 * The wait a response asks for, in ms, at most `maxWaitMs`; undefined when it is not a
 * "try later" answer (a 5xx without Retry-After is an error, not a request to wait).
 * Retry-After is delay-seconds or an HTTP date (RFC 9110 §10.2.3).
 */
export function retryAfterMs(
  status: number,
  header: string | string[] | undefined,
  maxWaitMs: number,
  now: number,
): number | undefined {
  const value = (Array.isArray(header) ? header[0] : header)?.trim();
  if (status !== 429 && !(status >= 500 && status <= 599 && value)) return undefined;
  let ms = DEFAULT_WAIT_MS;
  if (value && /^\d+$/.test(value)) ms = Number(value) * 1000;
  else if (value && !Number.isNaN(Date.parse(value))) ms = Math.max(0, Date.parse(value) - now);
  else if (status !== 429) return undefined;
  return Math.min(ms, maxWaitMs);
}
