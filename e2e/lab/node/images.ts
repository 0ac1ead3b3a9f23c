// The images every lab node's containerd holds, built offline from what scripts/build-node.sh
// built: the pause sandbox and agnhost (the workloads; also what Kubernetes' e2e suites run,
// under the same reference). agnhost gets busybox as /bin/sh & co., as the upstream image has a
// shell, for `kubectl exec` and exec probes. Archives are cached by content hash.
import { createHash } from 'node:crypto';
import { existsSync, readFileSync, realpathSync } from 'node:fs';
import { copyFile, mkdir, mkdtemp, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { requireTools, which } from '@flock/testkit';
import { writeOciArchive, type ImageSpec } from './oci.js';

export interface LabImage {
  name: string;
  archive: string;
}

const BUSYBOX = '/bin/busybox';
/** Applets linked into agnhost's /bin (what probes, tests and a person typing need). */
const APPLETS = [
  'sh',
  'ls',
  'cat',
  'echo',
  'ip',
  'touch',
  'rm',
  'test',
  'sleep',
  'ps',
  'wget',
  'nc',
];

/** The version scripts/build-node.sh wrote beside a binary it built (NAME.version). */
function version(name: 'pause' | 'agnhost'): string {
  requireTools(name);
  const built = dirname(realpathSync(which(name)!));
  return readFileSync(join(built, `${name}.version`), 'utf8').trim();
}

export function pauseImage(): string {
  return `registry.k8s.io/pause:${version('pause')}`;
}

export function agnhostImage(): string {
  return `registry.k8s.io/e2e-test-images/agnhost:${version('agnhost')}`;
}

function hashOf(files: string[], extra: string): string {
  const h = createHash('sha256').update(extra);
  for (const f of files) h.update(readFileSync(f));
  return h.digest('hex').slice(0, 16);
}

/** Build (or reuse) the lab's image archives. */
export async function labImages(): Promise<LabImage[]> {
  requireTools('pause', 'agnhost', 'tar');
  if (!existsSync(BUSYBOX))
    throw new Error(`${BUSYBOX} is missing: apt-get install busybox-static (./dev setup does)`);
  const pause = which('pause')!;
  const agnhost = which('agnhost')!;
  // Beside the binaries' own cache: .cache/node/<hash>/ → .cache/images/.
  const cache = join(dirname(dirname(dirname(realpathSync(agnhost)))), 'images');
  const images: { spec: (root: string) => Promise<ImageSpec>; inputs: string[]; name: string }[] = [
    {
      name: pauseImage(),
      inputs: [pause],
      spec: async (root) => {
        await copyFile(pause, join(root, 'pause'));
        return { name: pauseImage(), layers: [root], entrypoint: ['/pause'] };
      },
    },
    {
      name: agnhostImage(),
      inputs: [agnhost, BUSYBOX],
      spec: async (root) => {
        await copyFile(agnhost, join(root, 'agnhost'));
        await mkdir(join(root, 'bin'));
        await mkdir(join(root, 'etc'));
        await mkdir(join(root, 'tmp'), { mode: 0o1777 });
        await copyFile(BUSYBOX, join(root, 'bin', 'busybox'));
        for (const a of APPLETS) await symlink('busybox', join(root, 'bin', a));
        await writeFile(join(root, 'etc', 'passwd'), 'root:x:0:0:root:/root:/bin/sh\n');
        await writeFile(join(root, 'etc', 'group'), 'root:x:0:\n');
        // The upstream image's entry point: `agnhost SUBCOMMAND ...` from the pod's args.
        return { name: agnhostImage(), layers: [root], entrypoint: ['/agnhost'], cmd: ['pause'] };
      },
    },
  ];
  const out: LabImage[] = [];
  for (const image of images) {
    const archive = join(cache, `${hashOf(image.inputs, image.name + APPLETS.join())}.tar`);
    if (!existsSync(archive)) {
      const root = await mkdtemp(join(tmpdir(), 'flock-image-'));
      try {
        await writeOciArchive(await image.spec(root), archive);
      } finally {
        await rm(root, { recursive: true, force: true });
      }
    }
    out.push({ name: image.name, archive });
  }
  return out;
}
