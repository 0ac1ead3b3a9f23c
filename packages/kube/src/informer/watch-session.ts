// One watch of a cache, from start to end, whatever the end is: the server closes it, the
// connection fails, an ERROR event arrives, the watchdog finds it silent, or the cache stops it.
// Whichever comes first settles it; the watch is aborted before the result is handed back, and
// anything the stream delivers after that is ignored. This is what guarantees one watch at a
// time: the cache starts the next one only after this one has settled.
import { systemClock, type Clock, type TimerHandle } from '../core/clock.js';
import { isGone, KubeApiError } from '../core/errors.js';
import type { ListWatchSource, SourceEvent, WatchOptions } from './listwatch-source.js';

/** How a watch ended; `productive`: it delivered at least one event (bookmarks count). */
export type WatchEnd =
  | { kind: 'expired' | 'closed' | 'stalled' | 'stopped'; productive: boolean }
  | { kind: 'error' | 'api-error'; productive: boolean; err: unknown };

export type DataEvent = Exclude<SourceEvent<unknown>, { type: 'ERROR' }>;

interface WatchSession {
  /** Settles exactly once, after the watch was aborted. */
  ended: Promise<WatchEnd>;
  /** End it now (kind 'stopped'). */
  stop: () => void;
}

export function startWatch(
  source: ListWatchSource,
  options: WatchOptions,
  /** Restart after this long without any event (a bookmark counts). */
  watchdogMs: number,
  /** Receives the events of this watch only, in order; must not throw. */
  onData: (event: DataEvent) => void,
  clock: Clock = systemClock,
): WatchSession {
  let finished = false;
  let productive = false;
  let abort: (() => void) | undefined;
  let watchdog: TimerHandle | undefined;
  let settle!: (end: WatchEnd) => void;
  const ended = new Promise<WatchEnd>((resolve) => (settle = resolve));

  const finish = (end: WatchEnd) => {
    if (finished) return;
    finished = true;
    clock.clearTimeout(watchdog);
    try {
      abort?.();
    } finally {
      settle(end);
    }
  };
  const armWatchdog = () => {
    clock.clearTimeout(watchdog);
    watchdog = clock.setTimeout(() => finish({ kind: 'stalled', productive }), watchdogMs);
  };
  const onEvent = (event: SourceEvent<unknown>) => {
    if (finished) return; // a superseded watch still talking
    armWatchdog();
    if (event.type === 'ERROR') {
      const s = event.object;
      const message = `watch error: ${s.message ?? ''}`;
      const err = new KubeApiError(s.code ?? 500, s.reason ?? '', message, s);
      finish(
        isGone(err) ? { kind: 'expired', productive } : { kind: 'api-error', productive, err },
      );
      return;
    }
    productive = true;
    onData(event);
  };
  const onDone = (err?: unknown) => {
    if (err === undefined) finish({ kind: 'closed', productive });
    else if (isGone(err)) finish({ kind: 'expired', productive });
    else if (err instanceof KubeApiError) finish({ kind: 'api-error', productive, err });
    else finish({ kind: 'error', productive, err });
  };

  armWatchdog();
  try {
    abort = source.watch(options, onEvent, onDone);
    if (finished) abort(); // onDone ran synchronously, before abort was known
  } catch (err) {
    finish({ kind: 'error', productive, err });
  }
  return { ended, stop: () => finish({ kind: 'stopped', productive }) };
}
