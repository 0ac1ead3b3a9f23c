// CLI: write the generated CRDs into a directory (default: the repo's crds/) and the field
// reference next to it (--reference FILE), or with --check, fail when they differ.
import { readFile, readdir, writeFile, mkdir } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { renderReference } from './reference.js';
import { renderCrds } from './render.js';

async function main(argv: string[]): Promise<number> {
  const check = argv.includes('--check');
  const refIndex = argv.indexOf('--reference');
  const reference = refIndex >= 0 ? argv[refIndex + 1] : undefined;
  const dir = resolve(
    argv.find((a, i) => !a.startsWith('--') && (refIndex < 0 || i !== refIndex + 1)) ?? 'crds',
  );
  const wanted = renderCrds();
  if (check) {
    const present = (await readdir(dir).catch(() => [])).filter((f) => f.endsWith('.yaml'));
    const stale = [...wanted.keys()].filter((f) => !present.includes(f));
    for (const file of present) {
      const text = await readFile(join(dir, file), 'utf8');
      if (wanted.get(file) !== text) stale.push(file);
    }
    if (stale.length) {
      process.stderr.write(
        `crds out of date in ${dir}: ${stale.join(', ')}; run npx nx run api:generate-crds\n`,
      );
      return 1;
    }
    return 0;
  }
  await mkdir(dir, { recursive: true });
  for (const [file, text] of wanted) await writeFile(join(dir, file), text);
  if (reference) await writeFile(reference, renderReference());
  process.stdout.write(`wrote ${wanted.size} CRDs to ${dir}\n`);
  return 0;
}

process.exitCode = await main(process.argv.slice(2));
