// Bundle the CNI plugin into ONE file for /opt/cni/bin: dist/bundle/flock.mjs (+ the bin/flock
// launcher next to it). The runtime starts the plugin for every pod, so start-up is what
// matters: esbuild from the TypeScript sources, minified, and the @flock/api modules the plugin
// does not use are dropped: they carry zod (~25 ms of start-up); the plugin checks by hand.
//   node scripts/bundle.mjs [--outdir DIR] [--probes]
// --probes also bundles scripts/probes/*.mjs (full zod vs zod/mini) for the latency bench.
import { Buffer } from 'node:buffer';
import { chmodSync, copyFileSync, mkdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve, sep } from 'node:path';
import process from 'node:process';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const argv = process.argv.slice(2);
const at = argv.indexOf('--outdir');
const outdir = resolve(at >= 0 && argv[at + 1] ? argv[at + 1] : join(root, 'dist', 'bundle'));
const apiSrc = resolve(root, '..', 'api', 'src') + sep;

// @flock/api's modules only declare schemas: tell esbuild so, so that it drops those unused.
const apiIsPure = {
  name: 'flock-api-is-pure',
  setup(b) {
    b.onResolve({ filter: /.*/ }, async (args) => {
      if (args.pluginData === 'resolving') return undefined;
      const r = await b.resolve(args.path, {
        kind: args.kind,
        importer: args.importer,
        resolveDir: args.resolveDir,
        pluginData: 'resolving',
      });
      if (r.errors.length > 0 || !r.path.startsWith(apiSrc)) return r.errors.length ? undefined : r;
      return { ...r, sideEffects: false };
    });
  },
};

mkdirSync(outdir, { recursive: true });
const outfile = join(outdir, 'flock.mjs');
const result = await build({
  entryPoints: [join(root, 'src', 'main.ts')],
  outfile,
  bundle: true,
  platform: 'node',
  target: 'node24',
  format: 'esm',
  minify: true,
  legalComments: 'none',
  conditions: ['@flock/source'],
  metafile: true,
  logLevel: 'warning',
  plugins: [apiIsPure],
});

// Guards: what would silently cost start-up or break at run time fails the build instead.
const output = Object.values(result.metafile.outputs)[0];
const inputs = Object.entries(output?.inputs ?? {})
  .filter(([, i]) => i.bytesInOutput > 0)
  .map(([path]) => path);
const heavy = inputs.filter((i) => /node_modules\/zod\//.test(i));
if (heavy.length > 0)
  throw new Error(`bundle pulls zod (${heavy[0]}): the plugin must import only zod-free modules`);
const code = readFileSync(outfile, 'utf8');
if (code.includes('Dynamic require of'))
  throw new Error('bundle contains a dynamic require(); it would fail at run time');

if (argv.includes('--probes'))
  for (const probe of ['zod-full', 'zod-mini'])
    await build({
      entryPoints: [join(root, 'scripts', 'probes', `${probe}.mjs`)],
      outfile: join(outdir, `probe-${probe}.mjs`),
      bundle: true,
      platform: 'node',
      target: 'node24',
      format: 'esm',
      minify: true,
      legalComments: 'none',
      logLevel: 'warning',
    });

copyFileSync(join(root, 'bin', 'flock'), join(outdir, 'flock'));
chmodSync(join(outdir, 'flock'), 0o755);
chmodSync(outfile, 0o644);
const kib = (Buffer.byteLength(code) / 1024).toFixed(1);
process.stdout.write(
  `bundle: ${relative(process.cwd(), outfile) || outfile} (${kib} KiB, ${inputs.length} inputs) + launcher\n`,
);
