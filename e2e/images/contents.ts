// What an image's /opt/flock may hold: the production dependency closure of the app's
// workspace package (computed here from package-lock.json, independently of the `npm ls` the
// Dockerfile uses), and of flock's packages only what ships: each package's package.json and
// dist/src (tsconfig.lib.json's output from src/), none of the harness and benchmarks that
// tsconfig.testing.json compiles from testing/ and bench/ into dist/testing and dist/bench.
import { existsSync, lstatSync, readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { z } from 'zod';

const Deps = z.record(z.string(), z.string()).optional();
const LockEntry = z.looseObject({
  resolved: z.string().optional(),
  link: z.boolean().optional(),
  dev: z.boolean().optional(),
  dependencies: Deps,
  optionalDependencies: Deps,
  peerDependencies: Deps,
});
const Lock = z.looseObject({
  lockfileVersion: z.literal(3),
  packages: z.record(z.string(), LockEntry),
});

/**
 * Install paths (node_modules/a, node_modules/a/node_modules/b, …) of everything the workspace
 * package at `workspace` (e.g. packages/agent) needs at run time, itself included: dependencies,
 * optional and peer dependencies, resolved the way Node does (nearest node_modules upwards).
 */
export function productionClosure(lockText: string, workspace: string): Set<string> {
  const { packages } = Lock.parse(JSON.parse(lockText));
  const resolve = (at: string, dep: string): string | undefined => {
    for (let base = at; ;) {
      const candidate = base ? `${base}/node_modules/${dep}` : `node_modules/${dep}`;
      if (packages[candidate]) return candidate;
      if (!base) return undefined;
      const i = base.lastIndexOf('/node_modules/');
      base = i >= 0 ? base.slice(0, i) : '';
    }
  };
  const found = new Set<string>();
  const visit = (path: string): void => {
    if (found.has(path)) return;
    found.add(path);
    const entry = packages[path]!;
    const at = entry.link ? entry.resolved! : path;
    const target = packages[at] ?? {};
    const optional = new Set(Object.keys(target.optionalDependencies ?? {}));
    for (const dep of Object.keys({
      ...target.dependencies,
      ...target.optionalDependencies,
      ...target.peerDependencies,
    })) {
      const r = resolve(at, dep);
      if (r) visit(r);
      else if (!optional.has(dep)) throw new Error(`package-lock.json: ${at} needs ${dep}: absent`);
    }
  };
  const link = Object.entries(packages).find(([, e]) => e.link && e.resolved === workspace);
  if (!link) throw new Error(`package-lock.json: no workspace ${workspace}`);
  visit(link[0]);
  return found;
}

/** The packages of `appDir`/node_modules, nested ones too, as package-lock.json paths. */
export function installedPackages(appDir: string): Set<string> {
  const out = new Set<string>();
  const scan = (dir: string): void => {
    if (!existsSync(dir)) return;
    for (const e of readdirSync(dir, { withFileTypes: true })) {
      if (e.name.startsWith('.')) continue;
      const names = e.name.startsWith('@')
        ? readdirSync(join(dir, e.name)).map((s) => join(e.name, s))
        : [e.name];
      for (const name of names) {
        const path = join(dir, name);
        out.add(relative(appDir, path));
        // Workspace links point into packages/; only real package folders nest.
        if (!lstatSync(path).isSymbolicLink()) scan(join(path, 'node_modules'));
      }
    }
  };
  scan(join(appDir, 'node_modules'));
  return out;
}

/**
 * What is in a package directory under `packagesDir` besides package.json and dist/src/
 * (`agent/dist/testing/`, `kube/src/`, ...): [] when every package holds only what ships.
 */
export function unshippedPaths(packagesDir: string): string[] {
  const extra: string[] = [];
  for (const p of readdirSync(packagesDir)) {
    for (const e of readdirSync(join(packagesDir, p), { withFileTypes: true })) {
      if (e.name === 'package.json' && e.isFile()) continue;
      if (e.name !== 'dist' || !e.isDirectory()) {
        extra.push(`${p}/${e.name}${e.isDirectory() ? '/' : ''}`);
        continue;
      }
      for (const d of readdirSync(join(packagesDir, p, 'dist'), { withFileTypes: true }))
        if (d.name !== 'src' || !d.isDirectory())
          extra.push(`${p}/dist/${d.name}${d.isDirectory() ? '/' : ''}`);
    }
  }
  return extra.sort();
}

/** Folders and files of tests, benchmarks and fault injection, wherever tsc put them. */
const TEST_DIRS = new Set([
  'bench',
  'testing',
  'faults',
  'reliability',
  '__fixtures__',
  'testdata',
]);
const TEST_FILES = /(\.(test|spec)\.|^test-support\.)/;

/** Paths (relative to `dir`) of test code under `dir`; symbolic links are not followed. */
export function testCode(dir: string): string[] {
  const hits: string[] = [];
  const walk = (d: string): void => {
    for (const e of readdirSync(d, { withFileTypes: true })) {
      const path = join(d, e.name);
      if (e.isDirectory() && TEST_DIRS.has(e.name)) hits.push(`${relative(dir, path)}/`);
      else if (e.isDirectory()) walk(path);
      else if (TEST_FILES.test(e.name)) hits.push(relative(dir, path));
    }
  };
  walk(dir);
  return hits.sort();
}

const PackageJson = z.looseObject({
  name: z.string(),
  exports: z.record(z.string(), z.union([z.string(), z.record(z.string(), z.string())])).optional(),
});

/** The `./testing` entry files (public fakes) of the @flock packages under `packagesDir`. */
export function testingEntries(packagesDir: string): string[] {
  return readdirSync(packagesDir).flatMap((p) => {
    const pkg = PackageJson.parse(
      JSON.parse(readFileSync(join(packagesDir, p, 'package.json'), 'utf8')),
    );
    const entry = pkg.exports?.['./testing'];
    if (!entry) return [];
    const files = typeof entry === 'string' ? [entry] : Object.values(entry);
    return files
      .filter((f) => f.startsWith('./dist/'))
      .map((f) => join(p, f))
      .filter((f) => existsSync(join(packagesDir, f)));
  });
}
