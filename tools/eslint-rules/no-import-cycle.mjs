// flock/no-import-cycle: no import cycle between the files of a package's src/.
//
// The graph: the production files of one package's src/ (tests, `*.test.ts`, are left out: a test
// importing its subject is no cycle), and an edge for every relative module reference — `import`,
// `import type`, `export … from`, `export * from`, dynamic `import()`, a type's `import('…')`,
// `import x = require('…')` — resolved to the source file (`./x.js` → `./x.ts`; a specifier
// without extension, which nodenext refuses anyway, → `./x.ts` or `./x/index.ts`).
// Type-only references count: they cost nothing at run time, but two files that need each other's
// types are one tangle all the same, and the issue (#35) is about structure.
//
// For the file being linted, every import whose target leads back to it is reported, with the
// shortest cycle through that import: `src/a.ts → src/b.ts → src/a.ts`. Each import on a cycle is
// reported in its own file; removing any one of them breaks that cycle.
//
// Speed: files are parsed by TypeScript's parser, syntax only (a few times faster than
// typescript-eslint's); every other file's resolved references are cached for the lint run, keyed
// by path and checked against its mtime (one stat per file reached). The file being linted is read
// from the linter, not from disk, so an editor's unsaved buffer counts.
import { existsSync, readFileSync, statSync } from 'node:fs';
import { basename, dirname, join, relative, resolve, sep } from 'node:path';
import ts from 'typescript';

const isTest = (file) => /\.(test|spec)\.[cm]?tsx?$/.test(file);

/** The package's src/: the nearest ancestor named src whose parent has a package.json. */
const rootCache = new Map();
function srcRootOf(file) {
  const dir = dirname(file);
  if (!rootCache.has(dir)) {
    let root;
    for (let d = dir; dirname(d) !== d; d = dirname(d)) {
      if (basename(d) === 'src' && existsSync(join(dirname(d), 'package.json'))) {
        root = d;
        break;
      }
    }
    rootCache.set(dir, root);
  }
  return rootCache.get(dir);
}

const isFile = (path) => statSync(path, { throwIfNoEntry: false })?.isFile() ?? false;

/** The source file a relative specifier names, or undefined. */
function resolveSpecifier(from, spec) {
  const base = resolve(dirname(from), spec);
  const candidates = [];
  const ext = /\.([cm]?)js$/.exec(base);
  if (ext) candidates.push(base.slice(0, -ext[0].length) + `.${ext[1]}ts`);
  if (ext?.[1] === '') candidates.push(base.slice(0, -3) + '.tsx');
  if (/\.[cm]?tsx?$/.test(base)) candidates.push(base);
  candidates.push(`${base}.ts`, join(base, 'index.ts'));
  return candidates.find(isFile);
}

/** Every module reference in a file's code: [{ spec, start, end }], in source order. */
function referencesOf(file, code) {
  const source = ts.createSourceFile(file, code, ts.ScriptTarget.Latest, false, ts.ScriptKind.TS);
  const found = [];
  const add = (node, literal) => {
    if (literal && ts.isStringLiteralLike(literal))
      found.push({ spec: literal.text, start: node.getStart(source), end: node.getEnd() });
  };
  const visit = (node) => {
    if (ts.isImportDeclaration(node) || ts.isExportDeclaration(node)) {
      add(node, node.moduleSpecifier); // import, import type, export … from, export * from
    } else if (ts.isImportEqualsDeclaration(node)) {
      if (ts.isExternalModuleReference(node.moduleReference))
        add(node, node.moduleReference.expression); // import x = require('…')
    } else if (ts.isImportTypeNode(node)) {
      if (ts.isLiteralTypeNode(node.argument)) add(node, node.argument.literal); // import('…').T
    } else if (ts.isCallExpression(node) && node.expression.kind === ts.SyntaxKind.ImportKeyword) {
      add(node, node.arguments[0]); // import('…')
    }
    ts.forEachChild(node, visit);
  };
  visit(source);
  return found;
}

/** The files of `root` (tests aside) that `file`'s references name. */
function targetsOf(file, references, root) {
  const targets = [];
  for (const { spec } of references) {
    if (!spec.startsWith('.')) continue;
    const target = resolveSpecifier(file, spec);
    if (target && target.startsWith(root + sep) && !isTest(target)) targets.push(target);
  }
  return targets;
}

/** path -> { mtimeMs, targets }: the other files' edges, for this lint run. */
const fileCache = new Map();
function edgesOf(file, root) {
  const mtimeMs = statSync(file, { throwIfNoEntry: false })?.mtimeMs;
  if (mtimeMs === undefined) return [];
  const hit = fileCache.get(file);
  if (hit && hit.mtimeMs === mtimeMs && hit.root === root) return hit.targets;
  let code;
  try {
    code = readFileSync(file, 'utf8');
  } catch {
    return []; // gone since the stat
  }
  const targets = targetsOf(file, referencesOf(file, code), root);
  fileCache.set(file, { mtimeMs, root, targets });
  return targets;
}

/** @type {import('eslint').Rule.RuleModule} */
const rule = {
  meta: {
    type: 'problem',
    docs: { description: "no import cycle between the files of a package's src/" },
    schema: [],
    messages: {
      cycle:
        'import cycle: {{cycle}}. Move what both sides need into the file that produces it, or into a small new file both import.',
    },
  },
  create(context) {
    const file = resolve(context.filename);
    const root = srcRootOf(file);
    if (!root || isTest(file)) return {};
    return {
      Program() {
        const { sourceCode } = context;
        const direct = referencesOf(file, sourceCode.text)
          .filter(({ spec }) => spec.startsWith('.'))
          .map((ref) => ({ ...ref, target: targetsOf(file, [ref], root)[0] }))
          .filter(({ target }) => target);
        if (direct.length === 0) return;

        // Every file reachable from this one, with its edges (this file's from the linter).
        const succ = new Map([[file, [...new Set(direct.map((d) => d.target))]]]);
        const stack = [...succ.get(file)];
        while (stack.length > 0) {
          const n = stack.pop();
          if (succ.has(n)) continue;
          const out = edgesOf(n, root);
          succ.set(n, out);
          for (const m of out) if (!succ.has(m)) stack.push(m);
        }
        // Backwards from this file: for each file that leads back here, its next step on a
        // shortest way back.
        const pred = new Map();
        for (const [n, out] of succ) for (const m of out) pred.set(m, [...(pred.get(m) ?? []), n]);
        const next = new Map();
        const queue = [file];
        for (let i = 0; i < queue.length; i++) {
          for (const p of pred.get(queue[i]) ?? []) {
            if (p === file || next.has(p)) continue;
            next.set(p, queue[i]);
            queue.push(p);
          }
        }

        const pkg = dirname(root);
        const name = (f) => relative(pkg, f);
        for (const { start, end, target } of direct) {
          if (target !== file && !next.has(target)) continue;
          const cycle = [file, target];
          for (let n = target; n !== file; n = next.get(n)) cycle.push(next.get(n));
          context.report({
            loc: { start: sourceCode.getLocFromIndex(start), end: sourceCode.getLocFromIndex(end) },
            messageId: 'cycle',
            data: { cycle: cycle.map(name).join(' → ') },
          });
        }
      },
    };
  },
};

export default { rules: { 'no-import-cycle': rule } };
