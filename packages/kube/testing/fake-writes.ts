// Writes of the fake API server — create, replace, patch (merge and server-side apply, on the
// object or its status) and delete — with the checks the real server makes: resourceVersion
// preconditions (409), names that must match the URL (400), content types (415), field
// managers for apply (400), ownership conflicts (409), delete preconditions (409), and
// finalizers: a DELETE of an object with finalizers only sets its deletionTimestamp, the write
// that removes its last finalizer deletes it, and no finalizer may be added while it is going.
import { applyWithOwnership, jsonText, mergePatchJson, type Json } from './fake-apply.js';
import type { FakeStore } from './fake-store.js';
import { apiError, keyOf, notFound, type JsonObject, type Route } from './fake-resources.js';
import { apiVersionOf } from '../src/core/resource.js';
import { PatchStrategy, type KubeRequest } from '../src/transport/transport.js';

const isObject = (v: unknown): v is JsonObject =>
  v !== null && typeof v === 'object' && !Array.isArray(v);
const metaOf = (o: JsonObject) => (isObject(o['metadata']) ? o['metadata'] : {});

export function handleWrite(server: FakeStore, r: Route, req: KubeRequest): JsonObject {
  const notAllowed = () =>
    apiError(405, 'MethodNotAllowed', `${req.method} ${req.path} is not allowed`);
  if (req.method === 'POST') {
    if (r.name !== undefined) throw notAllowed();
    return create(server, r, body(req));
  }
  if (r.name === undefined) throw notAllowed();
  switch (req.method) {
    case 'PUT':
      return finishDeletion(server, r, replace(server, r, body(req)));
    case 'PATCH':
      return finishDeletion(server, r, patch(server, r, req));
    case 'DELETE':
      return remove(server, r, req.body);
    default:
      throw notAllowed();
  }
}

const finalizersOf = (o: JsonObject | undefined): Json[] =>
  o && Array.isArray(metaOf(o)['finalizers']) ? (metaOf(o)['finalizers'] as Json[]) : [];

/** The write that removed the last finalizer of an object being deleted deletes it. */
function finishDeletion(server: FakeStore, r: Route, written: JsonObject): JsonObject {
  if (metaOf(written)['deletionTimestamp'] === undefined || finalizersOf(written).length > 0)
    return written;
  return server.remove(r.entry, keyOf(r));
}

/** While an object is being deleted, its finalizers can only go, never come. */
function checkFinalizers(r: Route, next: JsonObject, cur: JsonObject): void {
  if (metaOf(cur)['deletionTimestamp'] === undefined) return;
  const had = new Set(finalizersOf(cur).map(jsonText));
  const added = finalizersOf(next).filter((f) => !had.has(jsonText(f)));
  if (added.length > 0)
    throw apiError(
      422,
      'Invalid',
      `${r.entry.ref.kind} "${r.name}" is invalid: metadata.finalizers: Forbidden: no new finalizers can be added if the object is being deleted, found new finalizers ${JSON.stringify(added)}`,
    );
}

function body(req: KubeRequest): JsonObject {
  if (!isObject(req.body))
    throw apiError(400, 'BadRequest', 'the request body must be a JSON object');
  return structuredClone(req.body);
}

/** Kind and apiVersion in a body must be the resource's (when present). */
function checkType(r: Route, obj: JsonObject, required: boolean): void {
  const apiVersion = apiVersionOf(r.entry.ref);
  for (const [field, want] of [
    ['apiVersion', apiVersion],
    ['kind', r.entry.ref.kind],
  ] as const) {
    if (obj[field] === undefined && !required) continue;
    if (obj[field] !== want) {
      throw apiError(
        400,
        'BadRequest',
        `${field} must be ${want}, got ${JSON.stringify(obj[field])}`,
      );
    }
  }
}

function checkName(r: Route, obj: JsonObject): void {
  const meta = metaOf(obj);
  if (r.name !== undefined && meta['name'] !== undefined && meta['name'] !== r.name) {
    throw apiError(400, 'BadRequest', 'the name of the object does not match the name on the URL');
  }
  if (meta['namespace'] !== undefined && meta['namespace'] !== r.namespace) {
    throw apiError(
      400,
      'BadRequest',
      'the namespace of the object does not match the namespace on the URL',
    );
  }
}

function checkVersion(obj: JsonObject, current: JsonObject): void {
  const want = metaOf(obj)['resourceVersion'];
  if (want !== undefined && want !== metaOf(current)['resourceVersion']) {
    throw apiError(
      409,
      'Conflict',
      'the object has been modified; please apply your changes to the latest version and try again',
    );
  }
}

function create(server: FakeStore, r: Route, obj: JsonObject): JsonObject {
  checkType(r, obj, false);
  const meta = { ...metaOf(obj) };
  if (meta['resourceVersion'] !== undefined) {
    throw apiError(400, 'BadRequest', 'resourceVersion should not be set on objects to be created');
  }
  if (!meta['name'] && typeof meta['generateName'] === 'string') {
    meta['name'] = `${meta['generateName']}${Math.random().toString(36).slice(2, 7)}`;
  }
  if (typeof meta['name'] !== 'string' || !meta['name']) {
    throw apiError(
      422,
      'Invalid',
      'metadata.name: Required value: name or generateName is required',
    );
  }
  if (r.entry.ref.namespaced) {
    if (meta['namespace'] !== undefined && meta['namespace'] !== r.namespace) checkName(r, obj);
    if (r.namespace === undefined)
      throw apiError(404, 'NotFound', 'a namespaced object needs a namespace');
    meta['namespace'] = r.namespace;
  }
  const next: JsonObject = { ...obj, metadata: meta };
  // The status of a resource with a status subresource is not set by create.
  if (r.entry.options.statusSubresource) delete next['status'];
  return server.create(r.entry, next);
}

/** Keep status on the main resource, or only status on /status. */
function scope(r: Route, next: JsonObject, current: JsonObject): JsonObject {
  if (r.subresource === 'status') {
    const out = { ...current };
    if (next['status'] === undefined) delete out['status'];
    else out['status'] = next['status'];
    return out;
  }
  if (!r.entry.options.statusSubresource) return next;
  const out = { ...next };
  if (current['status'] === undefined) delete out['status'];
  else out['status'] = current['status'];
  return out;
}

function current(r: Route): JsonObject {
  const obj = r.entry.objects.get(keyOf(r));
  if (!obj) throw notFound(r);
  return obj;
}

function replace(server: FakeStore, r: Route, obj: JsonObject): JsonObject {
  checkType(r, obj, false);
  checkName(r, obj);
  const cur = current(r);
  checkVersion(obj, cur);
  checkFinalizers(r, obj, cur);
  return server.commit(r.entry, keyOf(r), scope(r, obj, cur), cur);
}

function patch(server: FakeStore, r: Route, req: KubeRequest): JsonObject {
  const q = req.query ?? {};
  const type = req.contentType;
  if (type !== PatchStrategy.ServerSideApply && q['force'] !== undefined) {
    throw apiError(400, 'BadRequest', 'force may only be set for apply patches');
  }
  if (type === PatchStrategy.ServerSideApply) return apply(server, r, body(req), q);
  const builtinSmp = type === PatchStrategy.StrategicMergePatch && r.entry.options.builtin;
  if (type !== PatchStrategy.MergePatch && !builtinSmp) {
    throw apiError(
      415,
      'UnsupportedMediaType',
      `the fake API server does not support patch type ${String(type)}`,
    );
  }
  const p = body(req);
  const cur = current(r);
  checkVersion(p, cur);
  const next = mergePatchJson(cur, p) as JsonObject;
  checkName(r, next);
  checkFinalizers(r, next, cur);
  return server.commit(r.entry, keyOf(r), scope(r, next, cur), cur);
}

function apply(
  server: FakeStore,
  r: Route,
  config: JsonObject,
  q: NonNullable<KubeRequest['query']>,
): JsonObject {
  const manager = q['fieldManager'];
  if (typeof manager !== 'string' || !manager) {
    throw apiError(400, 'BadRequest', 'fieldManager is required for apply requests');
  }
  const force = q['force'] === true || q['force'] === 'true';
  checkType(r, config, true);
  checkName(r, config);
  const key = keyOf(r);
  const cur = r.entry.objects.get(key);
  if (cur) checkVersion(config, cur);
  else if (r.subresource === 'status') throw notFound(r);
  const meta = { ...metaOf(config) };
  delete meta['resourceVersion'];
  let intent: JsonObject = { ...config, metadata: meta };
  if (r.subresource === 'status')
    intent = config['status'] === undefined ? {} : { status: config['status'] };
  else if (r.entry.options.statusSubresource) delete intent['status'];
  const owners = new Map([...server.ownersOf(r.entry, key)].map(([m, p]) => [m, new Set(p)]));
  const result = applyWithOwnership(cur, intent, manager, force, owners);
  if ('conflicts' in result) {
    const list = result.conflicts.map((c) => `conflict with "${c.manager}": .${c.path}`).join('\n');
    throw apiError(
      409,
      'Conflict',
      `Apply failed with ${result.conflicts.length} conflict(s): ${list}`,
    );
  }
  if (cur) checkFinalizers(r, result.object, cur);
  const next = cur
    ? server.commit(r.entry, key, scope(r, result.object, cur), cur)
    : create(server, r, { ...result.object, metadata: { ...meta, name: r.name as Json } });
  r.entry.owners.set(key, owners);
  return next;
}

function remove(server: FakeStore, r: Route, options: unknown): JsonObject {
  const cur = current(r);
  const pre =
    isObject(options) && isObject(options['preconditions']) ? options['preconditions'] : {};
  const meta = metaOf(cur);
  for (const field of ['uid', 'resourceVersion'] as const) {
    if (pre[field] !== undefined && pre[field] !== meta[field]) {
      throw apiError(
        409,
        'Conflict',
        `Precondition failed: ${field} in precondition: ${jsonText(pre[field])}, ${field} in object meta: ${jsonText(meta[field])}`,
      );
    }
  }
  if (finalizersOf(cur).length === 0) return server.remove(r.entry, keyOf(r));
  if (meta['deletionTimestamp'] !== undefined) return cur;
  const deletionTimestamp = new Date(server.clock.now()).toISOString().replace(/\.\d{3}Z$/, 'Z');
  return server.commit(r.entry, keyOf(r), cur, cur, { deletionTimestamp });
}
