// zod schema -> Kubernetes structural OpenAPI v3 schema. The API server refuses schemas
// with $ref, additionalProperties: false, const or type arrays, so the JSON Schema that zod
// emits is rewritten here into the subset CRDs accept.
import { z } from 'zod';

export type JsonSchema = { [key: string]: unknown };

const DROP_KEYS = new Set(['$schema', 'id', '$id', 'propertyNames']);

function isObject(v: unknown): v is JsonSchema {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** Rewrite one JSON Schema node (and its children) into structural form. */
export function toStructural(node: JsonSchema, path = '$'): JsonSchema {
  const out: JsonSchema = {};
  for (const [key, value] of Object.entries(node)) {
    if (DROP_KEYS.has(key)) continue;
    if (key === '$ref' || key === 'definitions' || key === '$defs') {
      throw new Error(`${path}: $ref/definitions cannot be expressed in a structural schema`);
    }
    if (key === 'additionalProperties') {
      if (value === false) continue; // structural schemas prune unknown fields instead
      if (isObject(value)) out[key] = toStructural(value, `${path}.additionalProperties`);
      continue;
    }
    if (key === 'const') {
      out['enum'] = [value];
      continue;
    }
    if (key === 'properties' && isObject(value)) {
      out[key] = Object.fromEntries(
        Object.entries(value).map(([name, child]) => [
          name,
          toStructural(child as JsonSchema, `${path}.${name}`),
        ]),
      );
      continue;
    }
    if (key === 'items' && isObject(value)) {
      out[key] = toStructural(value, `${path}[]`);
      continue;
    }
    if ((key === 'anyOf' || key === 'oneOf' || key === 'allOf') && Array.isArray(value)) {
      throw new Error(
        `${path}: ${key} is not supported by flock's CRD generator; use a single type`,
      );
    }
    out[key] = value;
  }
  if (
    out['type'] === undefined &&
    !out['x-kubernetes-int-or-string'] &&
    !out['x-kubernetes-preserve-unknown-fields']
  ) {
    throw new Error(`${path}: every node of a structural schema needs a type`);
  }
  if (Array.isArray(out['type'])) throw new Error(`${path}: type arrays are not structural`);
  return out;
}

/** The structural OpenAPI schema of a zod schema, as the API server will see it on input. */
export function structuralSchema(schema: z.ZodType): JsonSchema {
  const json = z.toJSONSchema(schema, {
    target: 'openapi-3.0',
    io: 'input',
    unrepresentable: 'throw',
  });
  return toStructural(json);
}

/** Problems that would make the API server refuse the schema (used by tests). */
export function structuralViolations(node: unknown, path = '$'): string[] {
  if (!isObject(node)) return [];
  const problems: string[] = [];
  for (const key of ['$ref', 'definitions', '$defs', 'const', 'anyOf', 'oneOf', 'allOf', 'not']) {
    if (key in node) problems.push(`${path}: has ${key}`);
  }
  if (node['additionalProperties'] === false) problems.push(`${path}: additionalProperties: false`);
  if (isObject(node['additionalProperties']) && node['properties']) {
    problems.push(`${path}: both properties and additionalProperties`);
  }
  if (
    node['type'] === undefined &&
    !node['x-kubernetes-int-or-string'] &&
    !node['x-kubernetes-preserve-unknown-fields']
  ) {
    problems.push(`${path}: no type`);
  }
  if (Array.isArray(node['type'])) problems.push(`${path}: type is an array`);
  for (const [name, child] of Object.entries(
    (node['properties'] as JsonSchema | undefined) ?? {},
  )) {
    problems.push(...structuralViolations(child, `${path}.${name}`));
  }
  if (node['items']) problems.push(...structuralViolations(node['items'], `${path}[]`));
  if (isObject(node['additionalProperties'])) {
    problems.push(
      ...structuralViolations(node['additionalProperties'], `${path}.additionalProperties`),
    );
  }
  return problems;
}
