// An OCI image archive written directly, as `ctr images import` takes it: an image layout
// (oci-layout, index.json, blobs/sha256/...) in one tar. No registry is reachable here and no
// image builder is needed for the lab's two tiny images (pause, agnhost). Layers are plain tars
// made by GNU tar with fixed owners, order and times, so the same files give the same digests.
import { createHash } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { mkdir, mkdtemp, rename, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { run } from '@flock/exec';

export interface ImageSpec {
  /** Full reference, e.g. registry.k8s.io/pause:3.10.2 (the io.containerd.image.name). */
  name: string;
  /** Directories, each one layer (its contents become the image's root). */
  layers: string[];
  entrypoint?: string[];
  cmd?: string[];
  env?: string[];
  /** The user the container runs as unless the pod says otherwise (e.g. "1234"). */
  user?: string;
}

interface Descriptor {
  mediaType: string;
  digest: string;
  size: number;
}

const REFERENCE = /^[a-z0-9.-]+(?::\d+)?(?:\/[a-z0-9._-]+)+:[A-Za-z0-9._-]{1,128}$/;
const DETERMINISTIC = ['--sort=name', '--mtime=@0', '--owner=0', '--group=0', '--numeric-owner'];

async function sha256File(path: string): Promise<string> {
  const hash = createHash('sha256');
  for await (const chunk of createReadStream(path)) hash.update(chunk as Buffer);
  return hash.digest('hex');
}

/** Put a file into blobs/sha256 under its digest. */
async function addBlobFile(layout: string, path: string, mediaType: string): Promise<Descriptor> {
  const digest = await sha256File(path);
  const { size } = await stat(path);
  await rename(path, join(layout, 'blobs', 'sha256', digest));
  return { mediaType, digest: `sha256:${digest}`, size };
}

async function addBlobJson(layout: string, value: unknown, mediaType: string) {
  const body = Buffer.from(JSON.stringify(value));
  const digest = createHash('sha256').update(body).digest('hex');
  await writeFile(join(layout, 'blobs', 'sha256', digest), body);
  return { mediaType, digest: `sha256:${digest}`, size: body.length };
}

/** Write `spec` as an OCI archive at `out` (atomically: a temp file renamed into place). */
export async function writeOciArchive(spec: ImageSpec, out: string): Promise<void> {
  if (!REFERENCE.test(spec.name)) throw new Error(`bad image reference ${spec.name}`);
  const layout = await mkdtemp(join(tmpdir(), 'flock-oci-'));
  try {
    await mkdir(join(layout, 'blobs', 'sha256'), { recursive: true });
    const layers: Descriptor[] = [];
    for (const [i, dir] of spec.layers.entries()) {
      const tar = join(layout, `layer-${i}.tar`);
      await run('tar', [...DETERMINISTIC, '-C', dir, '-cf', tar, '.'], { timeoutMs: 120_000 });
      layers.push(await addBlobFile(layout, tar, 'application/vnd.oci.image.layer.v1.tar'));
    }
    const config = await addBlobJson(
      layout,
      {
        architecture: 'amd64',
        os: 'linux',
        config: {
          Env: spec.env ?? ['PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin'],
          ...(spec.entrypoint ? { Entrypoint: spec.entrypoint } : {}),
          ...(spec.cmd ? { Cmd: spec.cmd } : {}),
          ...(spec.user ? { User: spec.user } : {}),
        },
        // Uncompressed layers: the diff ID is the layer's own digest.
        rootfs: { type: 'layers', diff_ids: layers.map((l) => l.digest) },
      },
      'application/vnd.oci.image.config.v1+json',
    );
    const manifest = await addBlobJson(
      layout,
      {
        schemaVersion: 2,
        mediaType: 'application/vnd.oci.image.manifest.v1+json',
        config,
        layers,
      },
      'application/vnd.oci.image.manifest.v1+json',
    );
    const tag = spec.name.slice(spec.name.lastIndexOf(':') + 1);
    const index = {
      schemaVersion: 2,
      manifests: [
        {
          ...manifest,
          annotations: {
            'io.containerd.image.name': spec.name,
            'org.opencontainers.image.ref.name': tag,
          },
        },
      ],
    };
    await writeFile(join(layout, 'index.json'), JSON.stringify(index));
    await writeFile(join(layout, 'oci-layout'), JSON.stringify({ imageLayoutVersion: '1.0.0' }));
    await mkdir(dirname(out), { recursive: true });
    const tmp = `${out}.tmp`;
    await run('tar', [
      ...DETERMINISTIC,
      '-C',
      layout,
      '-cf',
      tmp,
      'oci-layout',
      'index.json',
      'blobs',
    ]);
    await rename(tmp, out);
  } finally {
    await rm(layout, { recursive: true, force: true });
  }
}
