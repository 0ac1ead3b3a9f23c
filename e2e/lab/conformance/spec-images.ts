// The images Kubernetes' [Conformance] specs run beside agnhost, busybox and glibc-dns-testing
// (node/images.ts), assembled offline as those are, under the names the e2e framework gives them
// (test/utils/image/manifest.go after KUBE_TEST_REPO_LIST), each as its upstream recipe
// (k8s.io/kubernetes/test/images/*/Dockerfile) makes it:
//   nonroot     busybox with USER 1234 (upstream: debian-base + USER 1234; the spec runs `id -u`)
//   nonewprivs  busybox with /usr/local/bin/nnp setuid root, CMD nnp (its Go program, built by
//               scripts/build-conformance-all.sh from the same k8s.io/kubernetes)
//   kitten,     agnhost with kitten.jpg/nautilus.jpg and data.json in /, CMD test-webserver
//   nautilus    (the files from test/images/<name>/html, staged by the same script)
//   nginx       Debian's nginx-light on a Debian root file system (mmdebstrap; upstream:
//               nginx:1.27-alpine), in the foreground, listening on port 80 of both families
//   sample-apiserver  k8s.io/sample-apiserver (at the control plane's version) as /sample-apiserver
//   etcd        etcd (go.etcd.io/etcd/server/v3, the version k8s.io/kubernetes pins) as
//               /usr/local/bin/etcd, where the aggregator spec runs it
// (both built by scripts/build-conformance-all.sh, on a busybox root).
// Archives are cached by content hash like the lab's own (node/images.ts archiveOf).
import { existsSync, realpathSync } from 'node:fs';
import { chmod, copyFile, mkdir, symlink } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { run } from '@flock/exec';
import { requireTools, which } from '@flock/testkit';
import {
  archiveOf,
  imageCache,
  upstreamBusybox,
  writeBusyboxRoot,
  type ImageRecipe,
  type LabImage,
} from '../node/images.js';
import { E2E_REGISTRY } from './ginkgo.js';

/** What scripts/build-conformance-all.sh stages from k8s.io/kubernetes/test/images. */
const INPUTS = 'e2e-image-inputs';

/** Debian's nginx on bookworm (the lab's Debian, as flock's own images' base). */
const NGINX_SUITE = 'bookworm';
const NGINX_SOURCES = [
  `deb http://deb.debian.org/debian ${NGINX_SUITE} main`,
  `deb http://deb.debian.org/debian ${NGINX_SUITE}-updates main`,
  `deb http://deb.debian.org/debian-security ${NGINX_SUITE}-security main`,
];

/** The repository names (after E2E_REGISTRY/) this file assembles. */
export const SPEC_IMAGE_REPOSITORIES = [
  'nonroot',
  'nonewprivs',
  'kitten',
  'nautilus',
  'nginx',
  'sample-apiserver',
  'etcd',
] as const;
type Repository = (typeof SPEC_IMAGE_REPOSITORIES)[number];

/** Those the specs pull even when a node holds them (the ImageVolume spec: pull policy Always). */
export const PULLED_REPOSITORIES: readonly Repository[] = ['kitten'];

/** The repository of an e2e image name, if it is one this file assembles. */
export function specRepository(name: string): Repository | undefined {
  const prefix = `${E2E_REGISTRY}/`;
  if (!name.startsWith(prefix)) return undefined;
  const repository = name.slice(prefix.length, name.lastIndexOf(':'));
  return SPEC_IMAGE_REPOSITORIES.find((r) => r === repository);
}

/** The archive of one named image (its repository one of SPEC_IMAGE_REPOSITORIES). */
export async function specImage(name: string): Promise<LabImage> {
  const repository = specRepository(name);
  if (!repository) throw new Error(`${name}: not an image spec-images.ts assembles`);
  const recipe = RECIPES[repository](name);
  return archiveOf(imageCache(), { ...recipe, recipe: `${RECIPE_VERSION} ${recipe.recipe ?? ''}` });
}

function inputs(): string {
  requireTools(INPUTS);
  return realpathSync(which(INPUTS)!);
}

/** Bump when a recipe below changes what it writes (the archives' cache key). */
const RECIPE_VERSION = 'spec-images-1';

const RECIPES: Record<Repository, (name: string) => ImageRecipe> = {
  nonroot: (name) => {
    const busybox = upstreamBusybox();
    return {
      name,
      inputs: [busybox],
      spec: async (root) => {
        await writeBusyboxRoot(root, busybox);
        return { name, layers: [root], cmd: ['sh'], user: '1234' };
      },
    };
  },
  nonewprivs: (name) => {
    const busybox = upstreamBusybox();
    const nnp = join(inputs(), 'nnp');
    return {
      name,
      inputs: [busybox, nnp],
      spec: async (root) => {
        await writeBusyboxRoot(root, busybox);
        await mkdir(join(root, 'usr', 'local', 'bin'), { recursive: true });
        const at = join(root, 'usr', 'local', 'bin', 'nnp');
        await copyFile(nnp, at);
        // The spec runs it as uid 1000 and reads its effective uid: 0 only where escalation is allowed.
        await chmod(at, 0o4755);
        return { name, layers: [root], cmd: ['nnp'] };
      },
    };
  },
  'sample-apiserver': (name) =>
    program(name, 'sample-apiserver', '/sample-apiserver', {
      entrypoint: ['/sample-apiserver'],
    }),
  etcd: (name) => program(name, 'etcd', '/usr/local/bin/etcd', { cmd: ['/usr/local/bin/etcd'] }),
  kitten: (name) => servedFiles(name, 'kitten'),
  nautilus: (name) => servedFiles(name, 'nautilus'),
  nginx: (name) => {
    requireTools('mmdebstrap');
    return {
      name,
      // Its inputs are Debian's packages of the day: the suite and sources stand for them.
      inputs: [],
      recipe: NGINX_SOURCES.join(),
      spec: async (root) => {
        await run(
          'mmdebstrap',
          [
            '--quiet',
            '--variant=essential',
            '--include=nginx-light',
            '--dpkgopt=path-exclude=/usr/share/doc/*',
            '--dpkgopt=path-exclude=/usr/share/man/*',
            '--dpkgopt=path-exclude=/usr/share/locale/*',
            NGINX_SUITE,
            root,
            ...NGINX_SOURCES,
          ],
          { timeoutMs: 900_000 },
        );
        // Debian's default site listens on 80 of both families and serves its welcome page.
        return { name, layers: [root], cmd: ['nginx', '-g', 'daemon off;'] };
      },
    };
  },
};

/** agnhost's image with the files test/images/NAME/html has in its root, serving them. */
function servedFiles(name: string, image: 'kitten' | 'nautilus'): ImageRecipe {
  const dir = join(inputs(), image);
  if (!existsSync(dir)) throw new Error(`${dir} is missing: run scripts/build-conformance-all.sh`);
  const files = [join(dir, `${image}.jpg`), join(dir, 'data.json')];
  const busybox = upstreamBusybox();
  requireTools('agnhost');
  const agnhost = realpathSync(which('agnhost')!);
  return {
    name,
    inputs: [agnhost, busybox, ...files],
    spec: async (root) => {
      await writeBusyboxRoot(root, busybox);
      await copyFile(agnhost, join(root, 'agnhost'));
      await symlink('agnhost', join(root, 'agnhost-2'));
      for (const f of files) await copyFile(f, join(root, f.slice(dir.length + 1)));
      return { name, layers: [root], entrypoint: ['/agnhost'], cmd: ['test-webserver'] };
    },
  };
}

/** One program built by scripts/build-conformance-all.sh at `at` on a busybox root. */
function program(
  name: string,
  built: string,
  at: string,
  command: { entrypoint?: string[]; cmd?: string[] },
): ImageRecipe {
  const busybox = upstreamBusybox();
  const file = join(inputs(), built);
  return {
    name,
    inputs: [busybox, file],
    spec: async (root) => {
      await writeBusyboxRoot(root, busybox);
      await mkdir(join(root, dirname(at)), { recursive: true });
      await copyFile(file, join(root, at));
      return { name, layers: [root], ...command };
    },
  };
}
