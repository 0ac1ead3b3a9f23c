// Every package can be published on its own: `npm pack --dry-run --json` lists exactly what
// its tarball would hold, and that must be the built JS with its type declarations, README,
// LICENSE and a package.json whose entry points all exist in the tarball, and nothing else
// (no sources, tests, build info). Versions are released independently (nx release).
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { run } from '@flock/exec';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { REPO } from './support.js';

const PACKAGES = readdirSync(join(REPO, 'packages')).sort();
const LICENSE = readFileSync(join(REPO, 'packages', 'api', 'LICENSE'), 'utf8');

const Manifest = z.looseObject({
  name: z.string(),
  version: z.string(),
  private: z.boolean().optional(),
  license: z.string().optional(),
  type: z.string().optional(),
  main: z.string().optional(),
  types: z.string().optional(),
  exports: z.record(z.string(), z.union([z.string(), z.record(z.string(), z.string())])).optional(),
  bin: z.record(z.string(), z.string()).optional(),
  engines: z.record(z.string(), z.string()).optional(),
  files: z.array(z.string()).optional(),
});

const PackResult = z.array(
  z.looseObject({
    name: z.string(),
    files: z.array(z.object({ path: z.string() }).loose()),
  }),
);

function manifest(pkg: string) {
  return Manifest.parse(
    JSON.parse(readFileSync(join(REPO, 'packages', pkg, 'package.json'), 'utf8')),
  );
}

/** Every file path a manifest points at (entry points, types, bins), without the dev condition. */
function entryPoints(m: z.infer<typeof Manifest>): string[] {
  const paths = [m.main, m.types, ...Object.values(m.bin ?? {})];
  for (const [key, target] of Object.entries(m.exports ?? {})) {
    if (key === './package.json') continue;
    if (typeof target === 'string') paths.push(target);
    else
      for (const [condition, path] of Object.entries(target))
        if (condition !== '@flock/source') paths.push(path);
  }
  return paths.filter((p): p is string => !!p).map((p) => p.replace(/^\.\//, ''));
}

describe('nx release', () => {
  it('releases packages/* with independent versions', () => {
    const nx = JSON.parse(readFileSync(join(REPO, 'nx.json'), 'utf8')) as {
      release?: { projects?: string[]; projectsRelationship?: string };
    };
    expect(nx.release).toMatchObject({
      projects: ['packages/*'],
      projectsRelationship: 'independent',
    });
  });
});

describe.each(PACKAGES)('npm pack of packages/%s', (pkg) => {
  const m = manifest(pkg);

  it('is publishable: license, ESM, engines, and its tarball holds exactly what it should', async () => {
    if (m.private) {
      // Test infrastructure: never published, so npm would refuse it; nothing else to check.
      expect(m.name).toBe('@flock/testkit');
      return;
    }
    expect(m.license).toBe('Apache-2.0');
    expect(m.type).toBe('module');
    expect(m.engines?.['node']).toMatch(/^>=24/);
    expect(m.exports?.['.']).toBeDefined();
    expect(m.types).toMatch(/\.d\.ts$/);
    expect(readFileSync(join(REPO, 'packages', pkg, 'LICENSE'), 'utf8')).toBe(LICENSE);

    const r = await run('npm', ['pack', '--dry-run', '--json', '--ignore-scripts'], {
      cwd: join(REPO, 'packages', pkg),
      timeoutMs: 60_000,
    });
    const [packed] = PackResult.parse(JSON.parse(r.stdout));
    const files = packed!.files.map((f) => f.path);
    expect(packed!.name).toBe(m.name);
    for (const f of ['package.json', 'README.md', 'LICENSE']) expect(files).toContain(f);
    expect(files.some((f) => /^dist\/src\/.*\.js$/.test(f))).toBe(true);
    expect(files.some((f) => /^dist\/src\/.*\.d\.ts$/.test(f))).toBe(true);
    for (const entry of entryPoints(m)) expect(files, `entry point ${entry}`).toContain(entry);
    const unwanted = files.filter(
      (f) =>
        /\.test\.[cm]?[jt]s(\.map)?$|\.test\.d\.ts(\.map)?$/.test(f) ||
        f.endsWith('.tsbuildinfo') ||
        /^(src|testing|bench)\//.test(f) ||
        f.startsWith('dist/bench/') ||
        /(^|\/)(testdata|__golden__|node_modules)\//.test(f) ||
        /^(tsconfig.*\.json|vitest\.config\.ts|eslint\.config\.mjs)$/.test(f),
    );
    expect(unwanted).toEqual([]);
  });
});
