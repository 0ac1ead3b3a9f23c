// The fake API server's storage: objects per resource under one global resourceVersion (as in
// etcd), the change history that watches replay, compaction, paged lists from consistent
// snapshots, and the bookkeeping of every write (uid, creationTimestamp, generation, no-op
// detection, validation, server-side-apply ownership).
import { randomBytes } from 'node:crypto';
import type { Clock } from '../src/core/clock.js';
import { disownChanged, jsonText, type Json, type Ownership } from './fake-apply.js';
import {
  apiError,
  BUILTIN_RESOURCES,
  entryApiVersion,
  isBuiltinGroup,
  resourceId,
  type FakeResourceOptions,
  type JsonObject,
  type ResourceEntry,
  type Route,
} from './fake-resources.js';
import { selects, type StoredEvent, type WatchFilter } from './fake-watch.js';
import { apiVersionOf, objectKey, type ResourceRef } from '../src/core/resource.js';
import { parseFieldSelector, parseLabelSelector } from '../src/core/selectors.js';
import type { Query } from '../src/transport/transport.js';

export class FakeStore {
  readonly resources = new Map<string, ResourceEntry>();
  /** The global resourceVersion: the version of the latest write. */
  rv = 0;
  /** Versions up to this one are forgotten: older watches and continue tokens get 410. */
  compactedRv = 0;
  private seq = 0;
  private readonly snapshots = new Map<string, { rv: number; items: JsonObject[] }>();

  constructor(
    readonly clock: Clock,
    /** Told about every change, after it is stored. */
    private readonly onChange: (entry: ResourceEntry, e: StoredEvent) => void,
  ) {
    for (const [ref, o] of BUILTIN_RESOURCES) this.register(ref, o);
  }

  register(ref: ResourceRef, options: FakeResourceOptions = {}): void {
    const id = resourceId(ref.group, ref.version, ref.plural);
    const existing = this.resources.get(id);
    const builtin = options.builtin ?? isBuiltinGroup(ref.group);
    if (existing) {
      existing.options = { ...existing.options, ...options, builtin };
      return;
    }
    const entry = { ref, options: { ...options, builtin }, objects: new Map(), owners: new Map() };
    this.resources.set(id, { ...entry, history: [] });
  }

  entry(ref: ResourceRef): ResourceEntry {
    const e = this.resources.get(resourceId(ref.group, ref.version, ref.plural));
    if (!e) throw new Error(`fake API server: ${ref.plural} not registered`);
    return e;
  }

  compact(): void {
    this.compactedRv = this.rv;
    for (const entry of this.resources.values()) entry.history = [];
  }

  /** The namespace and selectors of a list or watch; 400 for fields the server cannot select. */
  filter(r: Route, query: Query): WatchFilter {
    let fields;
    let labels;
    try {
      fields = parseFieldSelector(String(query['fieldSelector'] ?? ''));
      const text = query['labelSelector'];
      labels = text ? parseLabelSelector(String(text)) : undefined;
    } catch (err) {
      throw apiError(400, 'BadRequest', (err as Error).message);
    }
    const allowed = new Set([
      'metadata.name',
      'metadata.namespace',
      ...(r.entry.options.selectableFields ?? []),
    ]);
    for (const f of fields) {
      if (!allowed.has(f.field)) {
        throw apiError(400, 'BadRequest', `field label not supported: ${f.field}`);
      }
    }
    return { ...(r.namespace !== undefined ? { namespace: r.namespace } : {}), fields, labels };
  }

  /** A list page; `continue` tokens page through the snapshot taken by the first page. */
  list(r: Route, query: Query): unknown {
    const { entry } = r;
    const filter = this.filter(r, query);
    let rv = this.rv;
    let items: JsonObject[];
    const token = query['continue'];
    if (token) {
      const snap = this.snapshots.get(String(token));
      this.snapshots.delete(String(token));
      if (!snap || snap.rv < this.compactedRv) {
        const msg =
          'The provided continue parameter is too old to display a consistent list result.';
        throw apiError(410, 'Expired', msg);
      }
      ({ rv, items } = snap);
    } else {
      items = [...entry.objects.entries()]
        .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
        .map(([, o]) => o)
        .filter((o) => selects(filter, o));
    }
    const limit = Number(query['limit'] ?? 0);
    let next: string | undefined;
    if (limit > 0 && items.length > limit) {
      next = `${rv}-${++this.seq}-${randomBytes(4).toString('hex')}`;
      this.snapshots.set(next, { rv, items: items.slice(limit) });
      items = items.slice(0, limit);
    }
    return {
      apiVersion: entryApiVersion(entry),
      kind: `${entry.ref.kind}List`,
      metadata: { resourceVersion: String(rv), ...(next ? { continue: next } : {}) },
      // Built-in types omit apiVersion/kind on list items; custom resources keep them.
      items: items.map((o) => {
        if (!entry.options.builtin) return o;
        const { apiVersion: _a, kind: _k, ...rest } = o;
        return rest;
      }),
    };
  }

  /** Store a new object (metadata filled in like the server does). */
  create(entry: ResourceEntry, obj: JsonObject): JsonObject {
    const meta = (obj['metadata'] ?? {}) as JsonObject;
    const key = objectKey({ metadata: meta });
    if (entry.objects.has(key)) {
      const msg = `${entry.ref.plural} "${jsonText(meta['name'])}" already exists`;
      throw apiError(409, 'AlreadyExists', msg);
    }
    const uid = `00000000-0000-4000-8000-${(++this.seq).toString(16).padStart(12, '0')}`;
    const creationTimestamp = new Date(this.clock.now()).toISOString().replace(/\.\d{3}Z$/, 'Z');
    const { deletionTimestamp: _deleting, ...given } = meta;
    const next: JsonObject = {
      ...obj,
      metadata: { ...given, uid, creationTimestamp, generation: 1 },
    };
    return this.commit(entry, key, next, undefined);
  }

  /**
   * Write `next` over `prev` (or as new): no-op if unchanged, else a new resourceVersion.
   * Server-set metadata comes from `prev`, except what `serverMeta` sets (deletionTimestamp).
   */
  commit(
    entry: ResourceEntry,
    key: string,
    next: JsonObject,
    prev?: JsonObject,
    serverMeta: JsonObject = {},
  ): JsonObject {
    const meta = { ...(next['metadata'] as JsonObject) };
    if (prev) {
      const p = prev['metadata'] as JsonObject;
      for (const k of SERVER_META) {
        if (p[k] === undefined) delete meta[k];
        else meta[k] = p[k];
      }
    }
    Object.assign(meta, serverMeta);
    next = { ...next, apiVersion: apiVersionOf(entry.ref), kind: entry.ref.kind, metadata: meta };
    if (prev && same(prev, next)) return prev;
    if (prev && specChanged(prev, next)) meta['generation'] = Number(meta['generation'] ?? 1) + 1;
    const invalid = entry.options.validate?.(next);
    if (invalid) {
      const msg = `${entry.ref.kind} "${jsonText(meta['name'])}" is invalid: ${invalid}`;
      throw apiError(422, 'Invalid', msg);
    }
    if (prev) disownChanged(prev, next, this.ownersOf(entry, key));
    meta['resourceVersion'] = String(++this.rv);
    entry.objects.set(key, next);
    const type = prev ? 'MODIFIED' : 'ADDED';
    this.record(entry, { rv: this.rv, type, object: next, ...(prev ? { old: prev } : {}) });
    return next;
  }

  /** Delete; the DELETED event carries the final state at the deletion's resourceVersion. */
  remove(entry: ResourceEntry, key: string): JsonObject {
    const final = structuredClone(entry.objects.get(key) as JsonObject);
    (final['metadata'] as JsonObject)['resourceVersion'] = String(++this.rv);
    entry.objects.delete(key);
    entry.owners.delete(key);
    this.record(entry, { rv: this.rv, type: 'DELETED', object: final });
    return final;
  }

  ownersOf(entry: ResourceEntry, key: string): Ownership {
    let owners = entry.owners.get(key);
    if (!owners) entry.owners.set(key, (owners = new Map<string, Set<string>>()));
    return owners;
  }

  private record(entry: ResourceEntry, e: StoredEvent): void {
    entry.history.push(e);
    this.onChange(entry, e);
  }
}

/** Metadata only the server sets: kept from the stored object on every update. */
const SERVER_META = [
  'name',
  'namespace',
  'uid',
  'creationTimestamp',
  'generation',
  'resourceVersion',
  'deletionTimestamp',
];

const withoutRv = (o: JsonObject) => {
  const { resourceVersion: _rv, ...meta } = o['metadata'] as JsonObject;
  return JSON.stringify(sortKeys({ ...o, metadata: meta }));
};
const same = (a: JsonObject, b: JsonObject) => withoutRv(a) === withoutRv(b);

/** Generation counts changes of anything but metadata and status. */
const specChanged = (a: JsonObject, b: JsonObject) => {
  const strip = ({ metadata: _m, status: _s, ...rest }: JsonObject) =>
    JSON.stringify(sortKeys(rest));
  return strip(a) !== strip(b);
};

function sortKeys(v: Json): Json {
  if (Array.isArray(v)) return v.map(sortKeys);
  if (v === null || typeof v !== 'object') return v;
  return Object.fromEntries(
    Object.keys(v)
      .sort()
      .map((k) => [k, sortKeys(v[k] as Json)]),
  );
}
