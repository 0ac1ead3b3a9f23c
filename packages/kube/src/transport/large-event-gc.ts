// A watch event bigger than V8's regular objects (a pod with 190 KB of annotations) is read as a
// string in the large-object space, and parsed into another: garbage that only a full
// collection frees, and V8 runs one only when the old generation fills. A namespace creating
// such pods would grow every agent's RSS by their size until then. After a burst of them ends,
// one full collection frees it all (at most one per burst, a few tens of ms); a burst that never
// ends (a namespace streaming such pods) still gets one every `maxWaitMs`.
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';

/** Lines at least this long leave large-object garbage (V8 allocates ≥ 128 KiB objects there). */
export const LARGE_EVENT_BYTES = 128 * 1024;

let exposed: (() => void) | null | undefined;

/** V8's full collection, made reachable without --expose-gc (null when the runtime refuses). */
function fullCollection(): (() => void) | null {
  if (exposed === undefined) {
    try {
      setFlagsFromString('--expose-gc');
      exposed = runInNewContext('gc') as () => void;
    } catch {
      exposed = null;
    }
  }
  return exposed;
}

export class LargeEventCollector {
  private timer: NodeJS.Timeout | undefined;
  /** When the first large line not yet collected was noted. */
  private pendingSince = 0;
  /** Full collections run so far. */
  runs = 0;

  constructor(
    private readonly quietMs = 500,
    private readonly collect: () => void = () => fullCollection()?.(),
    private readonly maxWaitMs = 5_000,
  ) {}

  /** A watch line of this many characters was parsed. */
  noteLine(length: number): void {
    if (length < LARGE_EVENT_BYTES) return;
    const now = Date.now();
    if (this.timer === undefined) this.pendingSince = now;
    // Once the burst is over: each large line pushes the collection back, but never past
    // maxWaitMs after the first one, so an endless stream cannot starve it.
    clearTimeout(this.timer);
    const delay = Math.max(0, Math.min(this.quietMs, this.pendingSince + this.maxWaitMs - now));
    this.timer = setTimeout(() => {
      this.timer = undefined;
      this.runs++;
      this.collect();
    }, delay);
    this.timer.unref();
  }
}

/** The process's one collector: every watch notes its lines here. */
export const largeEventCollector = new LargeEventCollector();
