// An in-memory API server behind the KubeTransport interface, for unit tests of everything
// built on this package: objects with resourceVersions and generations, paged lists with
// consistent continue tokens, watches with history (and 410 after compaction), selectors,
// optimistic concurrency, merge patch, server-side apply with field ownership, the status
// subresource, delete preconditions, discovery of what is registered — and switches to make
// it fail the ways real ones do.
import { systemClock, type Clock } from '../src/core/clock.js';
import { FakeClient } from './fake-client.js';
import {
  apiError,
  discovery,
  entryApiVersion,
  keyOf,
  notFound,
  route,
  type FakeResourceOptions,
  type JsonObject,
  type ResourceEntry,
  type Route,
} from './fake-resources.js';
import { FakeStore } from './fake-store.js';
import { FakeWatch, type WatchFilter } from './fake-watch.js';
import { handleWrite } from './fake-writes.js';
import { objectKey, type KubeObject, type ResourceRef } from '../src/core/resource.js';
import { INITIAL_EVENTS_END } from '../src/informer/listwatch-source.js';
import type {
  HttpMethod,
  KubeRequest,
  KubeTransport,
  Query,
  WatchEvent,
  WatchRequest,
} from '../src/transport/transport.js';

/** What an injected fault does to a request: fail with this error, or never answer. */
export type Fault = Error | 'hang' | undefined;

export interface RecordedRequest {
  method: HttpMethod | 'WATCH';
  /** The server clock's time of the request. */
  at: number;
  path: string;
  query: Query;
  contentType?: string;
  body?: unknown;
}

/** An object as the server stored it: with uid, resourceVersion and generation. */
export type Stored<T extends KubeObject> = T & {
  metadata: T['metadata'] & { uid: string; resourceVersion: string; generation: number };
};

export interface WatchStats {
  /** Watches of this path open now. */
  open: number;
  /** Most watches of this path that were ever open at the same time. */
  maxOpen: number;
  /** Watches of this path opened so far. */
  opened: number;
}

export class FakeApiServer implements KubeTransport {
  /** Every request and watch, in order. */
  readonly requests: RecordedRequest[] = [];
  /** Every watch opened: path, query and the clock's time. */
  readonly watchLog: Array<{ path: string; query: Query; at: number }> = [];
  readonly clock: Clock;
  /** Objects, versions and history; fake-writes.ts writes through it. */
  readonly store: FakeStore;
  private readonly watches = new Map<FakeWatch, ResourceEntry>();
  private readonly stats = new Map<string, WatchStats>();
  private readonly faults = new Set<(r: RecordedRequest) => Fault>();
  private seq = 0;

  /** Streaming lists (sendInitialEvents): served unless the server is made an older one. */
  private readonly watchList: boolean;

  constructor(options: { clock?: Clock; watchList?: boolean } = {}) {
    this.clock = options.clock ?? systemClock;
    this.watchList = options.watchList ?? true;
    this.store = new FakeStore(this.clock, (entry, e) => {
      for (const [w, we] of this.watches) if (we === entry) w.offer(e);
    });
  }

  /** Serve another resource (e.g. a CRD), or change how one is served. */
  register(ref: ResourceRef, options: FakeResourceOptions = {}): void {
    this.store.register(ref, options);
  }

  /** The current (global) resourceVersion. */
  get resourceVersion(): string {
    return String(this.store.rv);
  }

  // ---- transport ------------------------------------------------------------------------

  async request(req: KubeRequest): Promise<unknown> {
    const rec: RecordedRequest = {
      method: req.method,
      at: this.clock.now(),
      path: req.path,
      query: { ...req.query },
      ...(req.contentType ? { contentType: req.contentType } : {}),
      ...(req.body !== undefined ? { body: structuredClone(req.body) } : {}),
    };
    this.requests.push(rec);
    const fault = this.faultFor(rec);
    if (fault === 'hang') return hang(req.signal);
    if (fault) throw fault;
    await Promise.resolve(); // answers are asynchronous, as over a network
    if (req.signal?.aborted) throw req.signal.reason;
    return structuredClone(this.handle(req));
  }

  watch(
    req: WatchRequest,
    onEvent: (e: WatchEvent) => void,
    onDone: (err?: unknown) => void,
  ): () => void {
    const w = this.openWatch(req, onEvent, onDone);
    return () => w?.abort();
  }

  /** A client with its own network switch (see FakeClient), e.g. one per leader candidate. */
  connect(): FakeClient {
    return new FakeClient(this);
  }

  /** Add a fault; it sees every request (method WATCH for watches). Returns its remover. */
  inject(fault: (r: RecordedRequest) => Fault): () => void {
    this.faults.add(fault);
    return () => this.faults.delete(fault);
  }

  // ---- test setup and inspection (no faults, no recording) --------------------------------

  /** Create or replace unconditionally (status included); returns the stored object. */
  putObject<T extends KubeObject>(ref: ResourceRef, obj: T): Stored<T> {
    const entry = this.store.entry(ref);
    const key = objectKey(obj);
    const prev = entry.objects.get(key);
    const next = structuredClone(obj) as unknown as JsonObject;
    if (prev) delete (next['metadata'] as JsonObject)['resourceVersion'];
    // Test setup may put an object that is being deleted (what the server shows while
    // finalizers or a kubelet hold it).
    const deleting = (obj.metadata as { deletionTimestamp?: unknown }).deletionTimestamp;
    const when = deleting instanceof Date ? deleting.toISOString() : String(deleting);
    const serverMeta: JsonObject = deleting ? { deletionTimestamp: when } : {};
    let stored = prev ? this.store.commit(entry, key, next, prev) : this.store.create(entry, next);
    if (deleting) stored = this.store.commit(entry, key, stored, stored, serverMeta);
    return structuredClone(stored) as unknown as Stored<T>;
  }

  deleteObject(ref: ResourceRef, name: string, namespace?: string): boolean {
    const entry = this.store.entry(ref);
    const key = namespace ? `${namespace}/${name}` : name;
    if (!entry.objects.has(key)) return false;
    this.store.remove(entry, key);
    return true;
  }

  getObject<T = KubeObject>(ref: ResourceRef, name: string, namespace?: string): T | undefined {
    const obj = this.store.entry(ref).objects.get(namespace ? `${namespace}/${name}` : name);
    return obj ? (structuredClone(obj) as unknown as T) : undefined;
  }

  listObjects<T = KubeObject>(ref: ResourceRef): T[] {
    return [...this.store.entry(ref).objects.values()].map(
      (o) => structuredClone(o) as unknown as T,
    );
  }

  // ---- watch control ------------------------------------------------------------------------

  /** Open watches, optionally only those of one path. */
  openWatches(path?: string): FakeWatch[] {
    return [...this.watches.keys()].filter((w) => path === undefined || w.path === path);
  }

  watchStats(path: string): WatchStats {
    return { ...(this.stats.get(path) ?? { open: 0, maxOpen: 0, opened: 0 }) };
  }

  /** Connection reset on every open watch (of `path`). */
  dropWatches(path?: string, err?: Error): void {
    for (const w of this.openWatches(path)) w.drop(err);
  }
  /** Every open watch (of `path`) stays connected but delivers nothing any more. */
  silenceWatches(path?: string): void {
    for (const w of this.openWatches(path)) w.silence();
  }
  /** ERROR 410 Expired on every open watch (of `path`). */
  expireWatches(path?: string): void {
    for (const w of this.openWatches(path)) w.expire();
  }
  /** Normal end (server-side timeout) of every open watch (of `path`). */
  endWatches(path?: string): void {
    for (const w of this.openWatches(path)) w.end();
  }
  /** A BOOKMARK at the current resourceVersion to every watch that asked for bookmarks. */
  sendBookmarks(): void {
    for (const [w, entry] of this.watches)
      w.bookmark(this.store.rv, entryApiVersion(entry), entry.ref.kind);
  }
  /** Forget history: watches from older versions and old continue tokens get 410 Gone. */
  compact(): void {
    this.store.compact();
  }

  // ---- internals (used by fake-writes.ts and fake-client.ts) ------------------------------

  /** Open a watch; undefined when it failed at once (onDone is then called asynchronously). */
  openWatch(
    req: WatchRequest,
    onEvent: (e: WatchEvent) => void,
    onDone: (err?: unknown) => void,
  ): FakeWatch | undefined {
    const query = { ...req.query };
    const rec: RecordedRequest = { method: 'WATCH', at: this.clock.now(), path: req.path, query };
    this.requests.push(rec);
    const failLater = (err: unknown) => {
      queueMicrotask(() => onDone(err));
      return undefined;
    };
    let r: Route;
    let filter: WatchFilter;
    try {
      r = route(this.store.resources, req.path);
      if (r.name !== undefined)
        throw apiError(405, 'MethodNotAllowed', 'watch a collection, not an object');
      filter = this.store.filter(r, query);
      if (streams(query)) this.checkStreamingList(query);
    } catch (err) {
      return failLater(err);
    }
    const fault = this.faultFor(rec);
    if (fault instanceof Error) return failLater(fault);
    const entry = r.entry;
    const w = new FakeWatch(++this.seq, req.path, query, filter, onEvent, onDone, (closed) => {
      this.watches.delete(closed);
      (this.stats.get(closed.path) as WatchStats).open--;
    });
    this.watches.set(w, entry);
    const s = this.stats.get(req.path) ?? { open: 0, maxOpen: 0, opened: 0 };
    s.open++;
    s.opened++;
    s.maxOpen = Math.max(s.maxOpen, s.open);
    this.stats.set(req.path, s);
    this.watchLog.push({ path: req.path, query, at: this.clock.now() });
    const from = query['resourceVersion'];
    if (streams(query)) {
      // A streaming list: the current state as ADDED, then the bookmark that ends it.
      for (const object of entry.objects.values())
        w.offer({ rv: this.store.rv, type: 'ADDED', object });
      w.bookmark(this.store.rv, entryApiVersion(entry), entry.ref.kind, {
        [INITIAL_EVENTS_END]: 'true',
      });
    } else if (from === undefined || from === '' || from === '0') {
      for (const object of entry.objects.values())
        w.offer({ rv: this.store.rv, type: 'ADDED', object });
    } else if (!/^\d+$/.test(String(from))) {
      w.drop(apiError(400, 'BadRequest', `invalid resourceVersion ${String(from)}`));
    } else if (Number(from) < this.store.compactedRv) {
      w.expire();
    } else {
      for (const e of entry.history) if (e.rv > Number(from)) w.offer(e);
    }
    if (fault === 'hang') w.silence();
    return w;
  }

  /** What the real server refuses of a streaming list (422), as it does it. */
  private checkStreamingList(query: Query): void {
    if (!this.watchList)
      throw apiError(
        422,
        'Invalid',
        'sendInitialEvents: Forbidden: sendInitialEvents is forbidden for watch unless the WatchList feature gate is enabled',
      );
    if (!truthy(query['allowWatchBookmarks']))
      throw apiError(
        422,
        'Invalid',
        'allowWatchBookmarks: Forbidden: sendInitialEvents requires setting allowWatchBookmarks to true',
      );
    if (query['resourceVersionMatch'] !== 'NotOlderThan')
      throw apiError(
        422,
        'Invalid',
        'resourceVersionMatch: Forbidden: sendInitialEvents requires setting resourceVersionMatch to NotOlderThan',
      );
  }

  faultFor(rec: RecordedRequest): Fault {
    for (const f of this.faults) {
      const fault = f(rec);
      if (fault) return fault;
    }
    return undefined;
  }

  private handle(req: KubeRequest): unknown {
    const served = req.method === 'GET' ? discovery(this.store.resources, req.path) : undefined;
    if (served) return served;
    const r = route(this.store.resources, req.path);
    if (req.method === 'GET' && r.name === undefined) return this.store.list(r, req.query ?? {});
    if (req.method === 'GET') {
      const obj = r.entry.objects.get(keyOf(r));
      if (!obj) throw notFound(r);
      return obj;
    }
    return handleWrite(this.store, r, req);
  }
}

const truthy = (v: Query[string]) => v === true || v === 'true';
const streams = (query: Query) => truthy(query['sendInitialEvents']);

function hang(signal: AbortSignal | undefined): Promise<never> {
  return new Promise((_, reject) => {
    // abort() without a reason sets a DOMException, an Error.
    signal?.addEventListener('abort', () => reject(signal.reason as Error), { once: true });
  });
}
