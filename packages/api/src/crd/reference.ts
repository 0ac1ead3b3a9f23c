// The CRD field reference (docs/reference.md), generated from the same structural schemas as
// the CRDs, so every field's meaning, default and validation is written down exactly once.
import { allCrds } from './definitions.js';
import { KIND_NOTES } from './reference-notes.js';
import type { JsonSchema } from './structural.js';

interface Row {
  path: string;
  type: string;
  required: boolean;
  text: string;
}

/** A schema keyword's scalar value as text (`fallback` when absent or not a scalar). */
function scalar(value: unknown, fallback = ''): string {
  return typeof value === 'string' || typeof value === 'number' || typeof value === 'boolean'
    ? String(value)
    : fallback;
}

function typeOf(node: JsonSchema): string {
  if (node['type'] === 'array')
    return `[]${typeOf((node['items'] as JsonSchema | undefined) ?? {})}`;
  if (node['enum']) return (node['enum'] as unknown[]).map((v) => `\`${String(v)}\``).join(' \\| ');
  if (node['type'] === 'object' && node['additionalProperties']) return 'map[string]string';
  return scalar(node['type'], 'any');
}

function limits(node: JsonSchema): string[] {
  const out: string[] = [];
  if (node['default'] !== undefined) out.push(`default \`${JSON.stringify(node['default'])}\``);
  if (node['minimum'] !== undefined || node['maximum'] !== undefined) {
    out.push(`${scalar(node['minimum'], '…')}..${scalar(node['maximum'], '…')}`);
  }
  if (node['maxItems'] !== undefined) out.push(`at most ${scalar(node['maxItems'])} items`);
  const keys = node['x-kubernetes-list-map-keys'] as string[] | undefined;
  if (keys) out.push(`one item per ${keys.map((k) => `\`${k}\``).join(', ')}`);
  for (const v of (node['x-kubernetes-validations'] as { message: string }[] | undefined) ?? []) {
    out.push(`rule: ${v.message}`);
  }
  return out;
}

function walk(node: JsonSchema, path: string, required: boolean, rows: Row[]): void {
  const description = scalar(node['description']);
  const extra = limits(node);
  rows.push({
    path,
    type: typeOf(node),
    required,
    text: [description, ...extra].filter(Boolean).join(' — '),
  });
  const props = node['properties'] as Record<string, JsonSchema> | undefined;
  const req = new Set((node['required'] as string[] | undefined) ?? []);
  for (const [name, child] of Object.entries(props ?? {}))
    walk(child, `${path}.${name}`, req.has(name), rows);
  const items = node['items'] as JsonSchema | undefined;
  if (items?.['properties']) {
    const itemReq = new Set((items['required'] as string[] | undefined) ?? []);
    for (const [name, child] of Object.entries(items['properties'] as Record<string, JsonSchema>)) {
      walk(child, `${path}[].${name}`, itemReq.has(name), rows);
    }
  }
}

const escape = (s: string) => s.replaceAll('|', '\\|').replaceAll('\n', ' ');

export function renderReference(): string {
  const parts = [
    '# CRD reference',
    '',
    'Generated from the zod schemas in `packages/api/src` (`npx nx run api:generate-crds`); do not edit by hand.',
    'Rules are enforced by the API server (CEL) and re-checked by the operator and the agent.',
  ];
  for (const [, crd] of allCrds()) {
    const spec = crd['spec'] as JsonSchema;
    const names = spec['names'] as { kind: string; shortNames: string[] };
    const version = (spec['versions'] as JsonSchema[])[0] as JsonSchema;
    const root = (version['schema'] as JsonSchema)['openAPIV3Schema'] as JsonSchema;
    const props = root['properties'] as Record<string, JsonSchema>;
    parts.push('', `## ${names.kind}`, '', scalar(root['description']), '');
    parts.push(
      `\`${String(spec['group'])}/${String(version['name'])}\`, cluster-scoped, short names: ${names.shortNames.join(', ')}.`,
    );
    for (const v of (root['x-kubernetes-validations'] as { message: string }[] | undefined) ?? [])
      parts.push('', `Rule on the whole object: ${v.message}.`);
    const notes = KIND_NOTES[names.kind];
    if (notes) parts.push('', notes);
    for (const section of ['spec', 'status'] as const) {
      const rows: Row[] = [];
      walk(props[section] as JsonSchema, section, section === 'spec', rows);
      parts.push(
        '',
        `### ${names.kind} ${section}`,
        '',
        '| field | type | required | meaning |',
        '| --- | --- | --- | --- |',
      );
      for (const r of rows) {
        parts.push(
          `| \`${r.path}\` | ${escape(r.type)} | ${r.required ? 'yes' : ''} | ${escape(r.text)} |`,
        );
      }
    }
  }
  return parts.join('\n') + '\n';
}
