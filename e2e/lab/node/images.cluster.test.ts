// What the lab's images hold, run: each archive as images.ts writes it (the cached one when its
// inputs are unchanged), its one layer unpacked, the DNS specs' probe commands run inside it with
// chroot in a namespace of no network. Cluster tier: root (chroot, unshare) and the node binaries
// scripts/build-node.sh built (agnhost: the archives live beside it).
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { run } from '@flock/exec';
import { requireRoot, requireTools } from '@flock/testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { agnhostImage, busyboxImage, dnsutilsImage, labImages, type LabImage } from './images.js';

const DNSUTILS = 'flock.local/e2e-test-images/glibc-dns-testing:2.0.0';
const BUSYBOX = 'flock.local/e2e-test-images/busybox:1.37.0-1';
let dir: string;
const roots: Record<'agnhost' | 'dnsutils' | 'busybox', string> = {
  agnhost: '',
  dnsutils: '',
  busybox: '',
};

/** Unpack an archive's single layer into DIR/NAME (OCI layout: index -> manifest -> layer). */
async function unpack(image: LabImage, name: string): Promise<string> {
  const oci = join(dir, `${name}-oci`);
  const root = join(dir, name);
  await run('mkdir', ['-p', oci, root]);
  await run('tar', ['-xf', image.archive, '-C', oci]);
  const blob = (digest: string) => join(oci, 'blobs', ...digest.split(':'));
  const index = JSON.parse(await readFile(join(oci, 'index.json'), 'utf8')) as {
    manifests: { digest: string }[];
  };
  const manifest = JSON.parse(await readFile(blob(index.manifests[0]!.digest), 'utf8')) as {
    layers: { digest: string }[];
  };
  expect(manifest.layers).toHaveLength(1);
  await run('tar', ['-xf', blob(manifest.layers[0]!.digest), '-C', root]);
  return root;
}

/** `sh -c SCRIPT` inside the image's root, with no network. */
async function inImage(root: string, script: string) {
  return run('unshare', ['--net', 'chroot', root, '/bin/sh', '-c', script], {
    okCodes: [0, 1, 9],
  });
}

beforeAll(async () => {
  requireRoot();
  requireTools('unshare', 'chroot', 'tar');
  dir = await mkdtemp(join(tmpdir(), 'flock-images-it-'));
  const agnhost = (await labImages()).find((i) => i.name === agnhostImage())!;
  roots.agnhost = await unpack(agnhost, 'agnhost');
  roots.dnsutils = await unpack(await dnsutilsImage(DNSUTILS), 'dnsutils');
  roots.busybox = await unpack(await busyboxImage(BUSYBOX), 'busybox');
  for (const root of [roots.agnhost, roots.dnsutils]) {
    // What the kubelet writes into a pod: its /etc/hosts and resolv.conf.
    await writeFile(
      join(root, 'etc', 'hosts'),
      '127.0.0.1 localhost\nfd00:10:244::5 dns-querier-1.dns-test-service.ns.svc.cluster.local dns-querier-1\n',
    );
    await writeFile(
      join(root, 'etc', 'resolv.conf'),
      'search ns.svc.cluster.local svc.cluster.local cluster.local\nnameserver 127.0.0.1\noptions ndots:5\n',
    );
  }
}, 300_000);

afterAll(async () => {
  if (dir) await rm(dir, { recursive: true, force: true });
});

describe.each(['agnhost', 'dnsutils'] as const)("the DNS specs' querier tools in %s", (image) => {
  it('run with their shared libraries: dig, getent and the probe loop’s commands', async () => {
    const root = roots[image];
    const r = await inImage(
      root,
      // dns_common.go's loop, a step shortened; then each tool's own answer.
      'for i in `seq 1 2`; do test -n "$(getent hosts dns-querier-1)" && echo OK > /tmp/hosts@$i; sleep 0.1; done; ' +
        'cat /tmp/hosts@1 /tmp/hosts@2; dig -v 2>&1 | head -1; ' +
        "getent hosts dns-querier-1.dns-test-service.ns.svc.cluster.local | awk '{print $1}'; " +
        'echo abc | sed s/b/x/',
    );
    expect(r.stderr).toBe('');
    expect(r.stdout.split('\n')).toEqual([
      'OK',
      'OK',
      expect.stringMatching(/^DiG 9\./),
      'fd00:10:244::5',
      'axc',
      '',
    ]);
  });

  it('dig sends its query (no server answers here: it says so and exits 9)', async () => {
    const r = await inImage(
      roots[image],
      'dig +notcp +noall +answer +search +time=1 +tries=1 kubernetes.default AAAA; echo "exit $?"',
    );
    expect(r.stdout).toMatch(/no servers could be reached/);
    expect(r.stdout.trim().split('\n').pop()).toBe('exit 9');
  });
});

describe('agnhost as upstream’s image has it', () => {
  it('holds porter’s TLS pair in /, /uploads, the user and group defined in the image, and busybox whole (mv)', async () => {
    const root = roots.agnhost;
    expect(
      (await readFile(join(root, 'localhost.crt'), 'utf8')).startsWith('-----BEGIN CERTIFICATE'),
    ).toBe(true);
    expect((await readFile(join(root, 'localhost.key'), 'utf8')).includes('PRIVATE KEY')).toBe(
      true,
    );
    const r = await inImage(
      root,
      'test -d /uploads && echo uploads; grep -c "^user-defined-in-image:x:1000:" /etc/passwd; grep -c "^group-defined-in-image:x:50000:" /etc/group; ' +
        // What the StatefulSet specs run through kubectl exec to fail the readiness probe.
        'mv -v /localhost.crt /tmp/ || true; test -f /tmp/localhost.crt && mv /tmp/localhost.crt / && echo moved',
    );
    expect(
      r.stdout
        .trim()
        .split('\n')
        .filter((l) => !l.includes('->') && !l.startsWith('renamed')),
    ).toEqual(['uploads', '1', '1', 'moved']);
  });
});

describe('the e2e specs’ busybox', () => {
  it('passes every environment variable to `sh -c env`, names that are not identifiers included', async () => {
    // What the ConfigMap and Secret "consumable via the environment" specs give the container
    // (envFrom with the prefixes "", "p-", "1-", "$_-", "ABC_", "#@!") and read back.
    const names = ['data-1', 'p-data-1', '1-data-1', '$_-data-1', 'ABC_data-1', '#@!data-1'];
    const r = await run('env', [
      '-i',
      'PATH=/usr/sbin:/usr/bin:/sbin:/bin',
      ...names.map((n) => `${n}=value-1`),
      'unshare',
      '--net',
      'chroot',
      roots.busybox,
      '/bin/sh',
      '-c',
      'env',
    ]);
    const got = r.stdout.split('\n').filter((l) => l.endsWith('=value-1'));
    expect(got.sort()).toEqual(names.map((n) => `${n}=value-1`).sort());
  });
});
