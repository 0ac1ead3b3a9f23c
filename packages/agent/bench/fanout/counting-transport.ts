// The transport of one benchmark watcher: the real one, with each list item and watch event
// counted by the watch it came through, and the lag of every benchmark write it carries. Counted
// here rather than in the caches' handlers because the caches trim what they keep (the pod
// cache drops the annotation that carries the write's time) and some caches are private to the
// agent's classes (ClusterPolicyCaches). An event is seen here just before its cache applies it,
// in the same turn of the event loop.
import { performance } from 'node:perf_hooks';
import type { KubeRequest, KubeTransport, WatchEvent, WatchRequest } from '@flock/kube';

/** The annotation the churn writes: "<write number>@<epoch ms>". */
export const WRITTEN_AT = 'bench.flock.fritzlab.net/written-at';

/** Counts of one watch (a resource, and whether it is of one object by field selector). */
export interface WatchCounts {
  /** Watch requests: one per watch, one more per reconnect or relist. */
  watches: number;
  listed: number;
  added: number;
  modified: number;
  deleted: number;
  bookmarks: number;
  /** Bytes of the stream's lines, uncompressed (the relay's stream only: counting-relay.ts). */
  bytes?: number;
}

export const nowMs = () => performance.timeOrigin + performance.now();

/** The label the churn flips: "w<write number>_<epoch ms>", the write's mark as a label value. */
export const FLIP_LABEL = 'bench.flock.fritzlab.net/flip';
export const flipMark = (n: number, at: number) => `w${n}_${Math.round(at)}`;

function parseFlip(value: string | undefined): [number, number] | undefined {
  const m = value && /^w(\d+)_(\d+)$/.exec(value);
  return m ? [Number(m[1]), Number(m[2])] : undefined;
}

/** A watch by its resource ("networkpolicies"), "(one)" when it watches one object by name. */
function watchName(path: string, query: KubeRequest['query']): string {
  const plural = path.split('/').filter(Boolean).at(-1) ?? path;
  return query?.['fieldSelector'] ? `${plural} (one)` : plural;
}

export class CountingTransport implements KubeTransport {
  readonly counts = new Map<string, WatchCounts>();
  /** Write number → ms from its write to this process seeing it (the first time). */
  private lags = new Map<number, number>();
  /** Every write number seen: a slice carries the marks of its pods' earlier writes too. */
  private readonly seen = new Set<number>();

  constructor(private readonly inner: KubeTransport) {}

  /** The lags recorded since the last call. */
  drainLags(): [number, number][] {
    const out = [...this.lags];
    this.lags = new Map();
    return out;
  }

  /** The counts of a watch by name (created at its first use): also the relay's stream's. */
  of(name: string): WatchCounts {
    let c = this.counts.get(name);
    if (!c) {
      c = { watches: 0, listed: 0, added: 0, modified: 0, deleted: 0, bookmarks: 0 };
      this.counts.set(name, c);
    }
    return c;
  }

  async request(req: KubeRequest): Promise<unknown> {
    const body = await this.inner.request(req);
    const items = (body as { items?: unknown } | null)?.items;
    // A list page of a cache (discovery answers and the like have no items).
    if (req.method === 'GET' && Array.isArray(items))
      this.of(watchName(req.path, req.query)).listed += items.length;
    return body;
  }

  watch(req: WatchRequest, onEvent: (e: WatchEvent) => void, onDone: (err?: unknown) => void) {
    const counts = this.of(watchName(req.path, req.query));
    counts.watches++;
    return this.inner.watch(
      req,
      (event) => {
        if (event.type === 'ADDED') {
          counts.added++;
          this.lag(event.object);
        } else if (event.type === 'MODIFIED') {
          counts.modified++;
          this.lag(event.object);
        } else if (event.type === 'DELETED') counts.deleted++;
        else if (event.type === 'BOOKMARK') counts.bookmarks++;
        onEvent(event);
      },
      onDone,
    );
  }

  private lag(object: Record<string, unknown>): void {
    const annotations = (object['metadata'] as { annotations?: Record<string, string> } | undefined)
      ?.annotations;
    const mark = annotations?.[WRITTEN_AT];
    if (mark) {
      const at = mark.indexOf('@');
      this.saw(Number(mark.slice(0, at)), Number(mark.slice(at + 1)));
      return;
    }
    // A PeerSlice: the marks in its pods' labels (label writes only; ms precision).
    const pods = (object['spec'] as { pods?: { labels?: Record<string, string> }[] } | undefined)
      ?.pods;
    for (const p of pods ?? []) this.sawLabels(p.labels);
  }

  /** A peer record's labels (a slice's or a relay's): the churn's mark of a label write. */
  sawLabels(labels: Record<string, string> | undefined): void {
    const flip = parseFlip(labels?.[FLIP_LABEL]);
    if (flip) this.saw(flip[0], flip[1]);
  }

  /** Write `write`, sent at epoch ms `at`, is seen now (its lag is kept the first time only). */
  saw(write: number, at: number): void {
    if (this.seen.has(write)) return;
    this.seen.add(write);
    this.lags.set(write, nowMs() - at);
  }
}
