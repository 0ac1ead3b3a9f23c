// One watch stream of the fake API server. It filters changes by namespace and selectors the way
// the real watch cache does (an object that stops matching arrives as DELETED, one that starts
// matching as ADDED), delivers asynchronously and in order, and can be made to misbehave:
// go silent (a dead TCP connection), drop (connection reset), expire (ERROR 410), or end.
import type { Json } from './fake-apply.js';
import { matchesFieldSelector, type FieldRequirement } from '../src/core/selectors.js';
import { matchesSelector, type LabelSelector } from '@flock/api';
import type { Query, WatchEvent } from '../src/transport/transport.js';

export interface StoredEvent {
  rv: number;
  type: 'ADDED' | 'MODIFIED' | 'DELETED';
  /** The object after the change (the final state for DELETED). */
  object: Json;
  /** The object before the change (MODIFIED). */
  old?: Json;
}

export interface WatchFilter {
  namespace?: string;
  fields: FieldRequirement[];
  labels: LabelSelector | undefined;
}

type Step = { event: WatchEvent } | { done: true; err?: unknown };

const meta = (o: Json | undefined) =>
  (o as { metadata?: { namespace?: string; labels?: Record<string, string> } } | undefined)
    ?.metadata ?? {};

/** Is this object in the selection (namespace, fields, labels)? */
export function selects(filter: WatchFilter, o: Json | undefined): boolean {
  if (o === undefined) return false;
  const m = meta(o);
  if (filter.namespace !== undefined && m.namespace !== filter.namespace) return false;
  return matchesFieldSelector(filter.fields, o) && matchesSelector(filter.labels, m.labels ?? {});
}

export class FakeWatch {
  /** open: delivering; silent: connected but delivers nothing; closed: gone. */
  state: 'open' | 'silent' | 'closed' = 'open';
  private readonly steps: Step[] = [];
  private flushing = false;

  constructor(
    readonly id: number,
    readonly path: string,
    readonly query: Query,
    private readonly filter: WatchFilter,
    private readonly onEvent: (e: WatchEvent) => void,
    private readonly onDone: (err?: unknown) => void,
    private readonly onClosed: (w: FakeWatch) => void,
  ) {}

  get bookmarks(): boolean {
    return (
      this.query['allowWatchBookmarks'] === true || this.query['allowWatchBookmarks'] === 'true'
    );
  }

  /** Is this object in the watch's selection (namespace, fields, labels)? */
  selects(o: Json | undefined): boolean {
    return selects(this.filter, o);
  }

  /** Offer a change of this watch's collection. */
  offer(e: StoredEvent): void {
    if (this.state !== 'open') return;
    const now = this.selects(e.object);
    const before = e.type === 'MODIFIED' ? this.selects(e.old) : e.type === 'DELETED' && now;
    let event: WatchEvent | undefined;
    if (e.type === 'ADDED' && now) event = { type: 'ADDED', object: clone(e.object) };
    else if (e.type === 'DELETED' && now) event = { type: 'DELETED', object: clone(e.object) };
    else if (e.type === 'MODIFIED' && now && before)
      event = { type: 'MODIFIED', object: clone(e.object) };
    else if (e.type === 'MODIFIED' && now) event = { type: 'ADDED', object: clone(e.object) };
    else if (e.type === 'MODIFIED' && before) {
      // Left the selection: DELETED with the old state at the new resourceVersion.
      const gone = clone(e.old as Json);
      (gone['metadata'] as Record<string, unknown>)['resourceVersion'] = String(e.rv);
      event = { type: 'DELETED', object: gone };
    }
    if (event) this.push({ event });
  }

  bookmark(
    resourceVersion: number,
    apiVersion: string,
    kind: string,
    annotations?: Record<string, string>,
  ): void {
    if (this.state !== 'open' || !this.bookmarks) return;
    const metadata = {
      resourceVersion: String(resourceVersion),
      ...(annotations && { annotations }),
    };
    this.push({ event: { type: 'BOOKMARK', object: { apiVersion, kind, metadata } } });
  }

  /** Stop delivering anything while staying connected. */
  silence(): void {
    if (this.state !== 'open') return;
    this.state = 'silent';
    this.steps.length = 0;
  }

  /** Connection reset: undelivered events are lost, onDone gets an error. */
  drop(err: Error = new Error('connection reset by peer (fake)')): void {
    if (this.state === 'closed') return;
    this.steps.length = 0;
    this.state = 'open';
    this.push({ done: true, err });
  }

  /** The server says the watched version is gone: ERROR 410 Expired, then the stream ends. */
  expire(): void {
    this.fail(410, 'Expired', 'too old resource version');
  }

  /** An ERROR event with this Status, then the stream ends. */
  fail(code: number, reason: string, message: string): void {
    if (this.state === 'closed') return;
    this.state = 'open';
    this.push({
      event: {
        type: 'ERROR',
        object: { kind: 'Status', apiVersion: 'v1', status: 'Failure', reason, code, message },
      },
    });
    this.push({ done: true });
  }

  /** The server ends the watch normally (its timeout): onDone without error. */
  end(): void {
    if (this.state === 'closed') return;
    this.state = 'open';
    this.push({ done: true });
  }

  /** The client aborted: nothing more is delivered. */
  abort(): void {
    if (this.state === 'closed') return;
    this.state = 'closed';
    this.steps.length = 0;
    this.onClosed(this);
  }

  private push(step: Step): void {
    this.steps.push(step);
    if (this.flushing) return;
    this.flushing = true;
    queueMicrotask(() => this.flush());
  }

  private flush(): void {
    this.flushing = false;
    while (this.steps.length && this.state === 'open') {
      const step = this.steps.shift() as Step;
      if ('done' in step) {
        this.state = 'closed';
        this.steps.length = 0;
        this.onClosed(this);
        this.onDone(step.err);
        return;
      }
      try {
        this.onEvent(step.event);
      } catch (err) {
        // Like the real transport: a consumer that throws ends the stream with that error.
        this.state = 'closed';
        this.steps.length = 0;
        this.onClosed(this);
        this.onDone(err);
        return;
      }
    }
  }
}

function clone(o: Json): Record<string, unknown> {
  return structuredClone(o) as Record<string, unknown>;
}
