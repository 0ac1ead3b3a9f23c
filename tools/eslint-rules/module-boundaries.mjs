// flock/module-boundaries: the workspace's dependency rules, checked on every import.
// (@nx/eslint-plugin's enforce-module-boundaries does this from the Nx project graph; it is not
// published for the Nx version this workspace pins, so this rule reads the same facts — each
// project's package.json: its name, `nx.tags`, dependencies — and enforces them.)
//
// For every import, re-export, dynamic import() and import type of a file in a project:
//   - a workspace package is imported by name, never by a relative path into another project,
//     and a project never imports itself by name;
//   - the target's tags are allowed by the source's tags (`depConstraints`); test code
//     (`test: true`) may also import projects tagged type:test;
//   - a `…/testing` entry point (a package's public fakes) only from test code;
//   - a package imported by production code is in its `dependencies` (not only
//     `devDependencies`), so what ships never needs a test-only package at run time.
import { existsSync, readFileSync, readdirSync } from 'node:fs';
import { builtinModules } from 'node:module';
import { dirname, join, resolve, sep } from 'node:path';

const workspaceRoot = resolve(import.meta.dirname, '..', '..');

function readJson(path) {
  return JSON.parse(readFileSync(path, 'utf8'));
}

/** Every workspace project: npm workspaces of the root package.json (`dir/*` or `dir`). */
function loadProjects(root) {
  const dirs = readJson(join(root, 'package.json')).workspaces.flatMap((w) =>
    w.endsWith('/*')
      ? readdirSync(join(root, w.slice(0, -2)), { withFileTypes: true })
          .filter((d) => d.isDirectory())
          .map((d) => join(root, w.slice(0, -2), d.name))
      : [join(root, w)],
  );
  const projects = [];
  for (const dir of dirs) {
    const file = join(dir, 'package.json');
    if (!existsSync(file)) continue;
    const pkg = readJson(file);
    projects.push({
      name: pkg.name,
      root: dir,
      tags: pkg.nx?.tags ?? [],
      dependencies: new Set([
        ...Object.keys(pkg.dependencies ?? {}),
        ...Object.keys(pkg.peerDependencies ?? {}),
      ]),
      devDependencies: new Set(Object.keys(pkg.devDependencies ?? {})),
    });
  }
  if (projects.length === 0) throw new Error(`flock/module-boundaries: no projects in ${root}`);
  return projects;
}

let cached;
const projects = () => (cached ??= loadProjects(workspaceRoot));

const inside = (root, file) => file === root || file.startsWith(root + sep);
const projectOf = (file) => projects().find((p) => inside(p.root, file));
const byName = (name) => projects().find((p) => p.name === name);

/** '@scope/name/sub' -> ['@scope/name', '/sub']; 'name/sub' -> ['name', '/sub']. */
function splitSpecifier(spec) {
  const parts = spec.split('/');
  const n = spec.startsWith('@') ? 2 : 1;
  return [parts.slice(0, n).join('/'), parts.length > n ? '/' + parts.slice(n).join('/') : ''];
}

const builtins = new Set(builtinModules);
const isBuiltin = (spec) => spec.startsWith('node:') || builtins.has(spec.split('/')[0]);

/** @type {import('eslint').Rule.RuleModule} */
const rule = {
  meta: {
    type: 'problem',
    docs: { description: "flock's project boundaries: tags, entry points, declared dependencies" },
    schema: [
      {
        type: 'object',
        properties: {
          depConstraints: {
            type: 'object',
            additionalProperties: { type: 'array', items: { type: 'string' } },
          },
          test: { type: 'boolean' },
        },
        required: ['depConstraints'],
        additionalProperties: false,
      },
    ],
    messages: {
      tag: '{{source}} ({{sourceTags}}) may not import {{target}} ({{targetTags}}): {{source}} may depend only on {{allowed}}',
      untagged: '{{project}} has no type:* tag in its package.json nx.tags',
      relative: "relative import into another project ({{target}}): import '{{target}}' by name",
      self: '{{project}} imports itself by name: use a relative path',
      testing: "'{{spec}}' (fakes) is for test code only",
      undeclared:
        "'{{dep}}' is not in {{project}}'s dependencies{{dev}}: production code may use only what ships with it",
    },
  },
  create(context) {
    const { depConstraints, test = false } = context.options[0];
    const file = resolve(context.filename);
    const source = projectOf(file);
    if (!source) return {};
    const allowedFor = (tags) => {
      const lists = tags.filter((t) => t in depConstraints).map((t) => depConstraints[t]);
      if (lists.length === 0) return undefined;
      return new Set([...lists.flat(), ...(test ? ['type:test'] : [])]);
    };
    const allowed = allowedFor(source.tags);

    function check(node, spec, typeOnly) {
      if (typeof spec !== 'string') return;
      if (spec.startsWith('.')) {
        const target = projectOf(resolve(dirname(file), spec));
        if (target && target !== source)
          context.report({ node, messageId: 'relative', data: { target: target.name } });
        return;
      }
      if (isBuiltin(spec)) return;
      const [name, sub] = splitSpecifier(spec);
      const target = byName(name);
      if (target === source) {
        context.report({ node, messageId: 'self', data: { project: source.name } });
        return;
      }
      if (target) {
        if (!allowed) {
          context.report({ node, messageId: 'untagged', data: { project: source.name } });
        } else if (!target.tags.some((t) => allowed.has(t))) {
          context.report({
            node,
            messageId: 'tag',
            data: {
              source: source.name,
              sourceTags: source.tags.join(', ') || 'no tags',
              target: target.name,
              targetTags: target.tags.join(', ') || 'no tags',
              allowed: [...allowed].join(', '),
            },
          });
        }
        if (sub === '/testing' && !test)
          context.report({ node, messageId: 'testing', data: { spec } });
      }
      if (!test && !typeOnly && !source.dependencies.has(name)) {
        context.report({
          node,
          messageId: 'undeclared',
          data: {
            dep: name,
            project: source.name,
            dev: source.devDependencies.has(name) ? ' (only in devDependencies)' : '',
          },
        });
      }
    }

    const typeOnlyDeclaration = (node) =>
      node.importKind === 'type' ||
      node.exportKind === 'type' ||
      (node.specifiers?.length > 0 &&
        node.specifiers.every((s) => s.importKind === 'type' || s.exportKind === 'type'));

    return {
      ImportDeclaration: (node) => check(node, node.source.value, typeOnlyDeclaration(node)),
      ExportNamedDeclaration: (node) =>
        node.source && check(node, node.source.value, typeOnlyDeclaration(node)),
      ExportAllDeclaration: (node) => check(node, node.source.value, node.exportKind === 'type'),
      ImportExpression: (node) =>
        node.source.type === 'Literal' && check(node, node.source.value, false),
      TSImportType: (node) => {
        const arg = node.argument;
        const lit = arg?.type === 'TSLiteralType' ? arg.literal : arg;
        if (lit?.type === 'Literal') check(node, lit.value, true);
      },
    };
  },
};

export default { rules: { 'module-boundaries': rule } };
