// The fake API server's patch semantics: JSON merge patch (RFC 7386) and a model of server-side
// apply's field ownership. Each apply manager owns the leaf fields of its last applied
// configuration; fields it applied before and leaves out now are removed (unless another
// manager owns them); setting a field another applier owns to a different value is a conflict
// unless forced. Lists are atomic (one leaf), as for CRDs without list-map keys. Not modelled:
// ownership by update (non-apply) managers — their writes only take fields away from appliers.

export type Json = null | boolean | number | string | Json[] | { [key: string]: Json };
type JsonObject = { [key: string]: Json };

/** A JSON value in a message: scalars as String() writes them, objects and lists as JSON. */
export const jsonText = (v: Json | undefined): string =>
  typeof v === 'object' && v !== null ? JSON.stringify(v) : String(v);

/** Owners: manager -> leaf paths (JSON-encoded path arrays). */
export type Ownership = Map<string, Set<string>>;

const isObject = (v: unknown): v is JsonObject =>
  v !== null && typeof v === 'object' && !Array.isArray(v);

/** RFC 7386: objects merge recursively, null deletes, anything else replaces. */
export function mergePatchJson(target: Json | undefined, patch: Json): Json {
  if (!isObject(patch)) return patch;
  const out: JsonObject = isObject(target) ? { ...target } : {};
  for (const [k, v] of Object.entries(patch)) {
    if (v === null) delete out[k];
    else out[k] = mergePatchJson(out[k], v);
  }
  return out;
}

/** Fields that identify or are maintained by the server: never owned, never removed. */
const SYSTEM = new Set([
  '["apiVersion"]',
  '["kind"]',
  '["metadata","name"]',
  '["metadata","namespace"]',
  '["metadata","uid"]',
  '["metadata","resourceVersion"]',
  '["metadata","generation"]',
  '["metadata","creationTimestamp"]',
  '["metadata","managedFields"]',
]);

/** Leaf paths of an object: scalars, lists and empty objects. */
export function leafPaths(value: Json, prefix: string[] = [], out: string[] = []): string[] {
  if (isObject(value) && Object.keys(value).length > 0) {
    for (const [k, v] of Object.entries(value)) leafPaths(v, [...prefix, k], out);
  } else if (prefix.length) {
    const p = JSON.stringify(prefix);
    if (!SYSTEM.has(p)) out.push(p);
  }
  return out;
}

function getAt(obj: Json | undefined, path: string[]): Json | undefined {
  let cur: Json | undefined = obj;
  for (const k of path) {
    if (!isObject(cur)) return undefined;
    cur = cur[k];
  }
  return cur;
}

function deleteAt(obj: JsonObject, path: string[]): void {
  let cur: Json | undefined = obj;
  for (const k of path.slice(0, -1)) {
    if (!isObject(cur)) return;
    cur = cur[k];
  }
  if (isObject(cur)) delete cur[path[path.length - 1] as string];
}

/** Deep merge for apply: objects merge, everything else (lists included) replaces. */
function mergeApplied(target: Json | undefined, config: Json): Json {
  if (!isObject(config)) return structuredClone(config);
  const out: JsonObject = isObject(target) ? { ...target } : {};
  for (const [k, v] of Object.entries(config)) out[k] = mergeApplied(out[k], v);
  return out;
}

export interface ApplyConflict {
  /** Dotted, for messages. */
  path: string;
  manager: string;
  /** The leaf path as stored in Ownership. */
  key: string;
}

/**
 * Apply `config` as `manager` to `current` (undefined: the object is created). Returns the new
 * object and updates `owners`, or returns the conflicts and changes nothing.
 */
export function applyWithOwnership(
  current: JsonObject | undefined,
  config: JsonObject,
  manager: string,
  force: boolean,
  owners: Ownership,
): { object: JsonObject } | { conflicts: ApplyConflict[] } {
  const applied = new Set(leafPaths(config));
  const conflicts: ApplyConflict[] = [];
  for (const [other, paths] of owners) {
    if (other === manager) continue;
    for (const p of applied) {
      if (!paths.has(p)) continue;
      const path = JSON.parse(p) as string[];
      const same = JSON.stringify(getAt(current, path)) === JSON.stringify(getAt(config, path));
      if (!same) conflicts.push({ path: path.join('.'), manager: other, key: p });
    }
  }
  if (conflicts.length && !force) return { conflicts };
  for (const c of conflicts) owners.get(c.manager)?.delete(c.key);
  const object = structuredClone(current ?? {});
  // Fields this manager applied before but not now: removed unless someone else owns them.
  for (const p of owners.get(manager) ?? []) {
    if (applied.has(p)) continue;
    const ownedElsewhere = [...owners].some(([m, paths]) => m !== manager && paths.has(p));
    if (!ownedElsewhere) deleteAt(object, JSON.parse(p) as string[]);
  }
  owners.set(manager, applied);
  return { object: mergeApplied(object, config) as JsonObject };
}

/** A non-apply write changed these fields: appliers no longer own them. */
export function disownChanged(before: Json | undefined, after: Json, owners: Ownership): void {
  const paths = new Set([...leafPaths(before ?? {}), ...leafPaths(after)]);
  for (const p of paths) {
    const path = JSON.parse(p) as string[];
    if (JSON.stringify(getAt(before, path)) === JSON.stringify(getAt(after, path))) continue;
    for (const owned of owners.values()) owned.delete(p);
  }
}
