// The agent and operator images as the lab gets them: scripts/build-images.sh builds them from
// images/*/Dockerfile with buildah (or finds them cached by content hash), then each OCI archive
// is read as `ctr images import` reads it, opened in a throwaway buildah storage and run there
// (fresh namespaces, no network). Cluster tier: root, buildah, mmdebstrap and npm are needed, and
// a missing one fails with what to install.
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { run } from '@flock/exec';
import { requireRoot, requireTools } from '@flock/testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { entrypoint, finalStage, instructions, parseDockerfile } from '../chart/dockerfile.js';
import { readRepo, REPO } from '../chart/support.js';
import {
  installedPackages,
  productionClosure,
  testCode,
  testingEntries,
  unshippedPaths,
} from './contents.js';
import { ImageSandbox, readOciArchive, type OciArchive } from './oci.js';

/** The names scripts/build-images.sh gives the images (docs/install.md). */
const IMAGES = {
  agent: 'localhost/flock-agent:dev',
  operator: 'localhost/flock-operator:dev',
} as const;
type Image = keyof typeof IMAGES;
const ALL = Object.keys(IMAGES) as Image[];
const archivePath = (x: Image) => join(REPO, '.cache', 'images', `flock-${x}.tar`);
const dockerfile = (x: Image) => finalStage(parseDockerfile(readRepo('images', x, 'Dockerfile')));
const packageVersion = (p: string) =>
  (JSON.parse(readRepo('packages', p, 'package.json')) as { version: string }).version;
const NODE_VERSION = /FLOCK_NODE_VERSION=(\S+)/.exec(readRepo('scripts', 'env.sh'))?.[1];

const archives = {} as Record<Image, OciArchive>;
const images = {} as Record<Image, ImageSandbox>;

/** What of the machine's own network namespace buildah could change (it must not). */
async function hostNetwork(): Promise<{ links: string[]; forwarding: string[]; tables: string }> {
  const links = (
    JSON.parse((await run('ip', ['-j', 'link', 'show'])).stdout) as { ifname: string }[]
  )
    .map((l) => l.ifname)
    .sort();
  const forwarding = await Promise.all(
    ['/proc/sys/net/ipv4/ip_forward', '/proc/sys/net/ipv6/conf/all/forwarding'].map((f) =>
      readFile(f, 'utf8'),
    ),
  );
  return { links, forwarding, tables: (await run('nft', ['list', 'tables'])).stdout };
}
let hostBefore: Awaited<ReturnType<typeof hostNetwork>>;

beforeAll(async () => {
  requireRoot();
  requireTools('buildah', 'mmdebstrap', 'npm', 'tar', 'nft');
  hostBefore = await hostNetwork();
  // Cold: the base (≈ 1 min) and two builds (≈ 40 s each); cached: a second or two.
  const build = await run(join(REPO, 'scripts', 'build-images.sh'), [], {
    timeoutMs: 1_500_000,
  });
  const summary = build.stderr.split('\n').filter((l) => l.startsWith('build-images:'));
  process.stderr.write(`${summary.join('\n')}\n`);
  for (const x of ALL) {
    archives[x] = await readOciArchive(archivePath(x));
    images[x] = await ImageSandbox.open(archivePath(x));
  }
}, 1_800_000);

afterAll(async () => {
  for (const image of Object.values(images)) await image.close();
});

describe('the machine', () => {
  // buildah's default network would add a bridge (cni-podman0), turn on ip_forward and write
  // iptables rules in the machine's own namespace: builds run with --network host, image runs
  // with --network none, and this checks that it stays so.
  it('keeps its own network namespace as it was: no new link, forwarding or nftables table', async () => {
    expect(await hostNetwork()).toEqual(hostBefore);
  });
});

describe('the archives', () => {
  it.each(ALL)('%s: named for ctr import, configured as its Dockerfile says', (x) => {
    const { refName, config, layerBytes } = archives[x];
    expect(refName).toBe(IMAGES[x]);
    expect(config.os).toBe('linux');
    expect(config.architecture).toBe(process.arch === 'arm64' ? 'arm64' : 'amd64');
    expect(config.config.Entrypoint).toEqual(entrypoint(dockerfile(x)));
    expect(config.config.Labels?.['org.opencontainers.image.title']).toBe(`flock-${x}`);
    expect(config.config.Env).toContain('NODE_ENV=production');
    expect(config.config.Env.find((e) => e.startsWith('NODE_OPTIONS='))).toMatch(
      /^NODE_OPTIONS=--max-old-space-size=\d+/,
    );
    const user = instructions(dockerfile(x), 'USER').at(-1)?.text;
    expect(config.config.User || undefined).toBe(user);
    process.stderr.write(`${x}: ${(layerBytes / 1e6).toFixed(1)} MB of compressed layers\n`);
  });
});

describe('what runs inside', () => {
  it.each(ALL)('%s: Node.js and npm of the base', async (x) => {
    const node = await images[x].exec(['/usr/local/bin/node', '--version']);
    expect(node.stdout.trim()).toBe(`v${NODE_VERSION}`);
    for (const tool of ['npm', 'npx']) {
      const r = await images[x].exec([`/usr/local/bin/${tool}`, '--version']);
      expect(r.stdout.trim(), tool).toMatch(/^\d+\.\d+\.\d+$/);
    }
  });

  it.each(ALL)('%s: the entry point answers --version and --help', async (x) => {
    const main = entrypoint(dockerfile(x));
    const version = await images[x].exec([...main, '--version']);
    expect(version.stdout.trim()).toBe(`flock-${x} ${packageVersion(x)}`);
    const help = await images[x].exec([...main, '--help']);
    expect(help.stdout).toMatch(new RegExp(`^usage: flock-${x} `));
    expect(help.stdout).toContain('--version');
  });

  it('operator: runs as 65532, not root', async () => {
    const id = await images.operator.exec(['id', '-u']);
    expect(id.stdout.trim()).toBe('65532');
  });

  it('agent: BIRD 2, nftables, iproute2 ≥ 6.1, nsenter, sysctl and Tayga, where the agent and chart look', async () => {
    const version = async (command: string[]) => {
      const r = await images.agent.exec(command);
      return `${r.stdout}${r.stderr}`;
    };
    expect(await version(['/usr/sbin/bird', '--version'])).toMatch(/^BIRD version 2\.\d+/m);
    for (const nft of ['nft', '/usr/sbin/nft'])
      expect(await version([nft, '--version'])).toMatch(/^nftables v1\.\d+/m);
    expect(await version(['ip', '-V'])).toMatch(/iproute2-(6\.([1-9]|\d{2,})|[7-9]\.|\d{2,}\.)/);
    for (const nsenter of ['nsenter', '/usr/bin/nsenter'])
      expect(await version([nsenter, '--version'])).toMatch(/util-linux 2\.\d+/);
    expect(await version(['/usr/sbin/sysctl', '--version'])).toMatch(/procps-ng/);
    // --tayga's default, where the agent looks.
    expect(await version(['/usr/sbin/tayga', '--help'])).toMatch(/^Usage: \S*tayga /m);
    const pkgs = await images.agent.exec([
      'dpkg-query',
      '-W',
      '-f',
      '${Package} ${Version}\n',
      'bird2',
      'nftables',
      'iproute2',
      'util-linux',
      'procps',
      'tayga',
    ]);
    process.stderr.write(`agent image packages:\n${pkgs.stdout}`);
    expect(pkgs.stdout.trim().split('\n')).toHaveLength(6);
  });

  it('agent: the CNI plugin the chart installs answers a runtime VERSION call', async () => {
    // A fixed pipeline inside the image (the launcher reads the configuration on stdin).
    const r = await images.agent.exec(
      ['sh', '-c', 'echo \'{"cniVersion":"1.1.0"}\' | /opt/flock/cni/flock'],
      { env: { CNI_COMMAND: 'VERSION', FLOCK_NODE: '/usr/local/bin/node' } },
    );
    expect(JSON.parse(r.stdout)).toMatchObject({ supportedVersions: ['0.4.0', '1.0.0', '1.1.0'] });
  });
});

describe('nothing but what ships', () => {
  it.each(ALL)('%s: no test, bench or fault-injection code in flock’s packages', (x) => {
    const app = join(images[x].root, 'opt', 'flock', 'app');
    expect(unshippedPaths(join(app, 'packages'))).toEqual([]);
    expect(testCode(join(app, 'packages'))).toEqual([]);
    expect(testingEntries(join(app, 'packages'))).toEqual([]);
    if (x === 'agent') expect(testCode(join(images[x].root, 'opt', 'flock', 'cni'))).toEqual([]);
  });

  it.each(ALL)('%s: node_modules is exactly the production closure of the app', (x) => {
    const installed = installedPackages(join(images[x].root, 'opt', 'flock', 'app'));
    const other = ALL.find((o) => o !== x)!;
    // The test harness and its libraries first, for a readable failure.
    for (const pkg of [
      '@flock/testkit',
      '@flock/e2e',
      `@flock/${other}`,
      '@flock/cni', // the agent image has the plugin as one bundle, in /opt/flock/cni
      '@kubernetes/client-node',
      'vitest',
      'fast-check',
      'vite',
      'typescript',
    ])
      expect(installed.has(`node_modules/${pkg}`), pkg).toBe(false);
    const closure = productionClosure(readRepo('package-lock.json'), `packages/${x}`);
    expect([...installed].sort()).toEqual([...closure].sort());
  });
});
