// An image as the lab gets it: the OCI archive scripts/build-images.sh writes (what
// `ctr images import` takes). Its index, manifest and config are read straight from the tar;
// its file system is opened in a throwaway buildah storage (nothing shared with the build's),
// mounted for reading and run with `buildah run` in fresh namespaces without a network, so that
// what runs inside never sees the machine's network namespace.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { run, type RunResult } from '@flock/exec';
import { z } from 'zod';

const Descriptor = z.looseObject({
  mediaType: z.string(),
  digest: z.string().regex(/^sha256:[a-f0-9]{64}$/),
  size: z.number(),
  annotations: z.record(z.string(), z.string()).optional(),
});
const Index = z.looseObject({ schemaVersion: z.literal(2), manifests: z.array(Descriptor) });
const Manifest = z.looseObject({ config: Descriptor, layers: z.array(Descriptor) });
export const ImageConfig = z.looseObject({
  architecture: z.string(),
  os: z.string(),
  config: z.looseObject({
    User: z.string().optional(),
    Env: z.array(z.string()).default([]),
    Entrypoint: z.array(z.string()).nullish(),
    Labels: z.record(z.string(), z.string()).nullish(),
  }),
});

export interface OciArchive {
  /** org.opencontainers.image.ref.name of its one manifest: the name ctr gives the image. */
  refName: string | undefined;
  config: z.infer<typeof ImageConfig>;
  /** Compressed layer bytes (what a node pulls or imports). */
  layerBytes: number;
}

async function member(archive: string, name: string): Promise<unknown> {
  const r = await run('tar', ['-xOf', archive, name], { timeoutMs: 60_000 });
  return JSON.parse(r.stdout);
}

const blob = (digest: string) => `blobs/sha256/${digest.slice('sha256:'.length)}`;

export async function readOciArchive(archive: string): Promise<OciArchive> {
  const index = Index.parse(await member(archive, 'index.json'));
  if (index.manifests.length !== 1)
    throw new Error(`${archive}: ${index.manifests.length} manifests, want 1`);
  const top = index.manifests[0]!;
  const manifest = Manifest.parse(await member(archive, blob(top.digest)));
  return {
    refName: top.annotations?.['org.opencontainers.image.ref.name'],
    config: ImageConfig.parse(await member(archive, blob(manifest.config.digest))),
    layerBytes: manifest.layers.reduce((sum, l) => sum + l.size, 0),
  };
}

/** One image opened from its archive; close() removes the container, storage and all. */
export class ImageSandbox {
  private constructor(
    private readonly dir: string,
    private readonly container: string,
    /** Where the image's root file system is mounted (read it, do not write). */
    readonly root: string,
  ) {}

  private static buildah(dir: string, args: string[]): string[] {
    return [
      '--root',
      join(dir, 'storage'),
      '--runroot',
      join(dir, 'run'),
      '--storage-driver',
      'overlay',
      ...args,
    ];
  }

  static async open(archive: string): Promise<ImageSandbox> {
    const dir = await mkdtemp(join(tmpdir(), 'flock-image-'));
    try {
      const from = await run(
        'buildah',
        ImageSandbox.buildah(dir, ['from', '--quiet', `oci-archive:${archive}`]),
        { timeoutMs: 180_000 },
      );
      const container = from.stdout.trim();
      const mount = await run('buildah', ImageSandbox.buildah(dir, ['mount', container]));
      return new ImageSandbox(dir, container, mount.stdout.trim());
    } catch (error) {
      await rm(dir, { recursive: true, force: true });
      throw error;
    }
  }

  /**
   * Run a command inside the image as its config says (user, environment, working directory),
   * in new namespaces (runc) with no network: only a loopback interface.
   */
  exec(
    command: string[],
    options: { env?: Record<string, string>; okCodes?: number[] } = {},
  ): Promise<RunResult> {
    const env = Object.entries(options.env ?? {}).flatMap(([k, v]) => ['--env', `${k}=${v}`]);
    const args = ['run', '--isolation', 'oci', '--network', 'none', ...env, this.container, '--'];
    return run('buildah', ImageSandbox.buildah(this.dir, [...args, ...command]), {
      timeoutMs: 60_000,
      ...(options.okCodes ? { okCodes: options.okCodes } : {}),
    });
  }

  async close(): Promise<void> {
    await run('buildah', ImageSandbox.buildah(this.dir, ['rm', this.container]), {
      okCodes: [0, 1, 125],
    });
    await run('buildah', ImageSandbox.buildah(this.dir, ['rmi', '--all', '--force']), {
      okCodes: [0, 1, 125],
    });
    await rm(this.dir, { recursive: true, force: true });
  }
}
