// A cache's relist and backoff policy: after every watch, whether to start over from a list and
// how long to wait first; and the paged list a relist is. cache.ts runs the loop that asks.
import type { Backoff, BackoffOptions } from '../core/backoff.js';
import type { Random } from '../core/clock.js';
import { errorMessage, isGone } from '../core/errors.js';
import type { Logger } from '../core/logger.js';
import type { ListWatchSource } from './listwatch-source.js';
import type { WatchEnd } from './watch-session.js';

/** Reconnect/relist backoff of a cache unless it is given its own. */
export const CACHE_BACKOFF: BackoffOptions = { baseMs: 500, maxMs: 30_000, jitter: 0.5 };

/** Restart a watch that delivered nothing (not even a bookmark) for this long. */
export const CACHE_WATCHDOG_MS = 5 * 60_000;

/** The server-side watch timeout: the configured one, else random in [300, 600) s like client-go. */
export function watchTimeoutSeconds(configured: number | undefined, random: Random): number {
  return configured ?? Math.floor(300 * (1 + random()));
}

export interface NextStep {
  /** Start over from a list: the watch's state is expired or unknown. */
  relist: boolean;
  /** Wait this long first (ms); undefined: go on at once. */
  pauseMs: number | undefined;
}

interface WatchEndContext {
  backoff: Backoff;
  log: Logger;
  /** Logged with every line, e.g. the cache's name and resourceVersion. */
  meta: Record<string, unknown>;
  watchdogMs: number;
}

/** What a cache does after a watch ended: logged, and decided by how it ended. */
export function afterWatch(
  end: WatchEnd,
  { backoff, log, meta, watchdogMs }: WatchEndContext,
): NextStep {
  if (end.productive) backoff.reset();
  let relist = false;
  switch (end.kind) {
    case 'expired':
      log.info('watch expired (410): relisting', meta);
      relist = true;
      break;
    case 'closed':
      log.debug('watch closed by the server: reconnecting', meta);
      break;
    case 'stalled':
      log.warn('watch silent for too long: restarting it', { ...meta, watchdogMs });
      break;
    case 'api-error':
      // The stream's state is unknown after an API error: start over from a list.
      log.warn('watch failed: relisting', { ...meta, err: errorMessage(end.err) });
      relist = true;
      break;
    case 'error':
      log.warn('watch connection failed: reconnecting', { ...meta, err: errorMessage(end.err) });
      break;
    case 'stopped':
      break;
  }
  // A watch that delivered nothing before ending must not turn into a hot loop; only the
  // first expiry after a healthy period relists at once. A stalled watch already waited the
  // watchdog period: restart it at once (a backoff on top would keep a cache whose
  // connections keep going silent away from the server for up to the backoff cap).
  if (end.kind === 'stalled') return { relist, pauseMs: undefined };
  if (!end.productive || end.kind === 'error' || end.kind === 'api-error') {
    const first = backoff.attempts === 0;
    const delay = backoff.next();
    if (!(end.kind === 'expired' && first)) return { relist, pauseMs: delay };
  }
  return { relist, pauseMs: undefined };
}

type ListQuery = Omit<Parameters<ListWatchSource['list']>[0], 'continue'>;

export interface FullList<T> {
  items: T[];
  /** The first page's: where the watch after this list starts. */
  resourceVersion: string;
}

/**
 * Every page of a list, each page through `keep` as it arrives: only what the cache keeps of a
 * page outlives it (150,000 raw pods held until the last page would need gigabytes). Undefined
 * when it failed (logged: the caller retries with backoff) or when `stopped()` turned true
 * meanwhile.
 */
export async function listAll<T>(
  source: ListWatchSource,
  query: ListQuery,
  stopped: () => boolean,
  log: Logger,
  cache: string,
  keep: (items: unknown[]) => T[],
): Promise<FullList<T> | undefined> {
  const items: T[] = [];
  let resourceVersion: string | undefined;
  let token: string | undefined;
  try {
    do {
      const page = await source.list({ ...query, ...(token ? { continue: token } : {}) });
      if (stopped()) return undefined;
      resourceVersion ??= page.resourceVersion;
      for (const item of keep(page.items)) items.push(item); // (a spread overflows on huge pages)
      token = page.continue;
    } while (token);
  } catch (err) {
    if (stopped()) return undefined;
    const why = isGone(err) && token ? 'list continue token expired' : 'list failed';
    log.warn(`${why}: retrying`, { cache, err: errorMessage(err) });
    return undefined;
  }
  return { items, resourceVersion };
}
