// What network-policy-api's conformance workloads need from a lab: the images their manifests
// name (agnhost, under the upstream reference and an older tag than the lab builds), read from
// the module the suite was built from, so a new release's images cannot go unnoticed.
import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { run } from '@flock/exec';
import { requireTools } from '@flock/testkit';
import type { Lab } from '../core/lab.js';
import { agnhostImage } from '../node/images.js';
import { E2E_ROOT } from '../core/plan.js';

/** The Go module that pins the suite (scripts/build-cnp-conformance.sh builds from it). */
export const CNP_MODULE_DIR = join(E2E_ROOT, 'cnp-conformance');
const AGNHOST = 'registry.k8s.io/e2e-test-images/agnhost:';

/** The directory of sigs.k8s.io/network-policy-api in the Go module cache. */
export async function upstreamDir(): Promise<string> {
  requireTools('go');
  const { stdout } = await run(
    'go',
    ['list', '-mod=readonly', '-m', '-f', '{{.Dir}}', 'sigs.k8s.io/network-policy-api'],
    { cwd: CNP_MODULE_DIR, timeoutMs: 120_000 },
  );
  return stdout.trim();
}

/** Every `image:` of the YAML files in a manifests directory tree, sorted, once each. */
export async function imagesIn(dir: string): Promise<string[]> {
  const found = new Set<string>();
  const entries = await readdir(dir, { recursive: true, withFileTypes: true });
  for (const e of entries) {
    if (!e.isFile() || !/\.ya?ml$/.test(e.name)) continue;
    const text = await readFile(join(e.parentPath, e.name), 'utf8');
    for (const m of text.matchAll(/^\s*(?:-\s+)?image:\s*["']?([^\s"']+)/gm)) found.add(m[1]!);
  }
  return [...found].sort();
}

/**
 * Tag the lab's agnhost (node/images.ts: built from the control plane's k8s.io/kubernetes, with
 * bash, as the upstream image) on every node under each agnhost reference the suite's manifests
 * name. Any other image is an error: nothing else is built for the lab.
 */
export async function preloadCnpImages(lab: Lab): Promise<string[]> {
  const named = await imagesIn(join(await upstreamDir(), 'conformance', 'base'));
  const other = named.filter((n) => !n.startsWith(AGNHOST));
  if (other.length)
    throw new Error(
      `the conformance manifests name images the lab does not build: ${other.join(', ')}`,
    );
  if (!named.length) throw new Error('the conformance manifests name no image: layout changed?');
  await Promise.all(
    lab.nodes.map(async (node) => {
      for (const n of named) await node.ctr(['images', 'tag', '--force', agnhostImage(), n]);
    }),
  );
  return named;
}
