// The images every lab node's containerd holds, built offline from what scripts/build-node.sh
// built: the pause sandbox and agnhost (the workloads; also what Kubernetes' e2e suites run,
// under the same reference). agnhost gets a shell (the host's dash as /bin/sh, and bash) and
// busybox's core tools, as the upstream image has a shell and bash, for `kubectl exec` and exec
// probes, and the host's curl, OpenBSD netcat and wget, all with their shared libraries, as the
// upstream image has them (Alpine's curl and netcat-openbsd, busybox's wget): Kubernetes'
// networking e2e specs probe with `curl -g -q -s http://POD:9080/dial?...` and `nc -u -w 5 -p
// PORT HOST PORT` (busybox's nc has no UDP); the DNS specs query with `dig` and `getent`. And
// CoreDNS, the cluster DNS (core/dns.ts): the static binary scripts/build-coredns.sh built, alone,
// as upstream's image (distroless) has nothing else. For Kubernetes' e2e specs also busybox and
// glibc-dns-testing (conformance/prepare.ts). Archives are cached by content hash.
import { createHash } from 'node:crypto';
import { existsSync, readFileSync, realpathSync } from 'node:fs';
import { chmod, copyFile, mkdir, mkdtemp, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { run } from '@flock/exec';
import { requireTools, which } from '@flock/testkit';
import { writeOciArchive, type ImageSpec } from './oci.js';

export interface LabImage {
  name: string;
  archive: string;
}

const BUSYBOX = '/bin/busybox';
/** The host's programs agnhost's image carries: where they go in the image, their Debian package. */
const HOST_TOOLS = [
  // dash, not busybox, as /bin/sh: Debian's static busybox shell runs its own applet for a
  // command even when PATH has the real program first (its nc has no -u).
  { tool: 'dash', at: '/bin/sh', pkg: 'dash' },
  // The upstream image has bash too; network-policy-api's conformance workloads start with
  // `/bin/bash -c "/agnhost ..."`.
  { tool: 'bash', at: '/bin/bash', pkg: 'bash' },
  { tool: 'curl', at: '/usr/bin/curl', pkg: 'curl' },
  { tool: 'nc.openbsd', at: '/usr/bin/nc', pkg: 'netcat-openbsd' },
  // Not busybox's: Debian's static busybox 1.35 wget segfaults on `-T` (a timeout), which the
  // e2e specs pass (`wget -T 5 -qO- TARGET`, checkReachabilityFromPod).
  { tool: 'wget', at: '/usr/bin/wget', pkg: 'wget' },
  // The DNS specs' queriers (dns_common.go): `dig +notcp|+tcp +noall +answer +search NAME A|AAAA`
  // and `getent hosts NAME`, as the upstream image has them (Alpine's bind-tools and musl's).
  { tool: 'dig', at: '/usr/bin/dig', pkg: 'bind9-dnsutils' },
  { tool: 'getent', at: '/usr/bin/getent', pkg: 'libc-bin' },
] as const;

/**
 * What the e2e image glibc-dns-testing (Debian with dnsutils: the DNS specs' second querier, on
 * glibc) carries here: a shell, dig and getent on glibc, and busybox's applets for the rest.
 */
const DNSUTILS_TOOLS = HOST_TOOLS.filter((t) => ['dash', 'bash', 'dig', 'getent'].includes(t.tool));

type HostTool = (typeof HOST_TOOLS)[number] & { path: string };

/** The host's programs, found on PATH, each with the package that brings it. */
function hostTools(list: readonly (typeof HOST_TOOLS)[number][]): HostTool[] {
  return list.map((t) => {
    const path = which(t.tool);
    if (!path) throw new Error(`${t.tool} is missing: apt-get install ${t.pkg} (./dev setup does)`);
    return { ...t, path };
  });
}

/** Every shared library (and the loader) the programs need, once. */
async function librariesOf(tools: HostTool[]): Promise<string[]> {
  return [...new Set((await Promise.all(tools.map((t) => sharedLibraries(t.path)))).flat())];
}

/** Copy the programs to their places in the image and each library to the path ldd found it. */
async function installTools(root: string, tools: HostTool[], libs: string[]): Promise<void> {
  for (const t of tools) {
    await mkdir(join(root, dirname(t.at)), { recursive: true });
    await copyFile(t.path, join(root, t.at));
  }
  // The loader's default search path covers them.
  for (const lib of libs) {
    await mkdir(join(root, dirname(lib)), { recursive: true });
    await copyFile(lib, join(root, lib));
  }
}

/** /etc for a root-only image: passwd, group, and glibc's name service order (hosts: files, dns). */
async function writeEtc(root: string): Promise<void> {
  await mkdir(join(root, 'etc'), { recursive: true });
  await writeFile(join(root, 'etc', 'passwd'), 'root:x:0:0:root:/root:/bin/sh\n');
  await writeFile(join(root, 'etc', 'group'), 'root:x:0:\n');
  await writeFile(join(root, 'etc', 'nsswitch.conf'), 'hosts: files dns\n');
}

/** A dynamically linked binary's shared libraries and loader, as ldd resolves them. */
export async function sharedLibraries(binary: string): Promise<string[]> {
  const { stdout } = await run('ldd', [binary]);
  const libs = new Set<string>();
  for (const line of stdout.split('\n')) {
    const m = /(?:=>\s*)?(\/\S+)\s+\(0x/.exec(line);
    if (m) libs.add(m[1]!);
  }
  if (!libs.size) throw new Error(`ldd ${binary} named no library: ${stdout.trim()}`);
  return [...libs].sort();
}

/** The version the build script wrote beside a binary it built (NAME.version). */
function version(name: 'pause' | 'agnhost' | 'coredns'): string {
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

/** Under the reference kubeadm deploys it (its Deployment names it: core/dns.ts). */
export function corednsImage(): string {
  return `registry.k8s.io/coredns/coredns:v${version('coredns')}`;
}

/** The files of upstream's agnhost image beside the program (scripts/build-node.sh stages them). */
const AGNHOST_FILES = ['localhost.crt', 'localhost.key'];

/** What the recipes put into images beyond their inputs: part of every archive's cache key. */
const RECIPES =
  'all-applets' + JSON.stringify(HOST_TOOLS) + 'etc:nsswitch' + 'agnhost-2' + 'uploads,users';

function hashOf(files: string[], extra: string): string {
  const h = createHash('sha256').update(extra);
  for (const f of files) h.update(readFileSync(f));
  return h.digest('hex').slice(0, 16);
}

/** Build (or reuse) the lab's image archives. */
export async function labImages(): Promise<LabImage[]> {
  requireTools('pause', 'agnhost', 'coredns', 'tar', 'ldd');
  const tools = hostTools(HOST_TOOLS);
  const libs = await librariesOf(tools);
  if (!existsSync(BUSYBOX))
    throw new Error(`${BUSYBOX} is missing: apt-get install busybox-static (./dev setup does)`);
  const pause = which('pause')!;
  const agnhost = which('agnhost')!;
  // Every applet, as upstream's image (Alpine) has busybox whole (the StatefulSet specs `mv` a
  // file away through kubectl exec), but not over the real programs: dash is /bin/sh.
  const applets = await appletsBeside(tools);
  // Beside the program, from upstream's image directory (scripts/build-node.sh).
  const agnhostFiles = join(dirname(realpathSync(agnhost)), 'agnhost-files');
  const coredns = which('coredns')!;
  const cache = imageCache();
  const images: ImageRecipe[] = [
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
      inputs: [
        agnhost,
        BUSYBOX,
        ...tools.map((t) => t.path),
        ...libs,
        ...AGNHOST_FILES.map((f) => join(agnhostFiles, f)),
        coredns,
      ],
      spec: async (root) => {
        await copyFile(agnhost, join(root, 'agnhost'));
        // Upstream's image carries CoreDNS as /coredns (1.6.2 there, the lab's here): the
        // configurable resolv.conf spec runs it as its test DNS server.
        await copyFile(coredns, join(root, 'coredns'));
        // Upstream's image has a second name for it: the Containers specs run /agnhost-2 to
        // tell an overridden entrypoint from the image's own.
        await symlink('agnhost', join(root, 'agnhost-2'));
        await mkdir(join(root, 'bin'));
        await mkdir(join(root, 'tmp'), { mode: 0o1777 });
        await copyFile(BUSYBOX, join(root, 'bin', 'busybox'));
        for (const a of applets) await symlink('busybox', join(root, 'bin', a));
        await installTools(root, tools, libs);
        await writeEtc(root);
        // As upstream's image: porter's TLS pair in / (the StatefulSet specs' readiness probe
        // GETs /localhost.crt and moves it away to fail it), /uploads (agnhost netexec's upload
        // directory), and the user and group "defined in image" (uid 1000, gid 50000).
        for (const f of AGNHOST_FILES) await copyFile(join(agnhostFiles, f), join(root, f));
        await mkdir(join(root, 'uploads'));
        await writeFile(
          join(root, 'etc', 'passwd'),
          'root:x:0:0:root:/root:/bin/sh\nuser-defined-in-image:x:1000:1000::/home/user-defined-in-image:/bin/sh\n',
        );
        await writeFile(
          join(root, 'etc', 'group'),
          'root:x:0:\nuser-defined-in-image:x:1000:\ngroup-defined-in-image:x:50000:user-defined-in-image\n',
        );
        // The upstream image's entry point: `agnhost SUBCOMMAND ...` from the pod's args.
        return { name: agnhostImage(), layers: [root], entrypoint: ['/agnhost'], cmd: ['pause'] };
      },
    },
    {
      name: corednsImage(),
      inputs: [coredns],
      spec: async (root) => {
        await copyFile(coredns, join(root, 'coredns'));
        // Upstream's entry point; the Deployment's args name the Corefile.
        return { name: corednsImage(), layers: [root], entrypoint: ['/coredns'] };
      },
    },
  ];
  const out: LabImage[] = [];
  for (const image of images) out.push(await archiveOf(cache, image));
  return out;
}

export interface ImageRecipe {
  name: string;
  /** What the recipe puts in beyond its inputs, when not one of this file's (part of the key). */
  recipe?: string;
  /** Files whose contents the archive depends on (its cache key, with the name). */
  inputs: string[];
  spec: (root: string) => Promise<ImageSpec>;
}

export async function archiveOf(cache: string, image: ImageRecipe): Promise<LabImage> {
  const archive = join(
    cache,
    `${hashOf(image.inputs, image.name + RECIPES + (image.recipe ?? ''))}.tar`,
  );
  if (!existsSync(archive)) {
    const root = await mkdtemp(join(tmpdir(), 'flock-image-'));
    try {
      await writeOciArchive(await image.spec(root), archive);
    } finally {
      await rm(root, { recursive: true, force: true });
    }
  }
  return { name: image.name, archive };
}

/**
 * A busybox image under `name` (what Kubernetes' e2e specs call busybox, e.g. an init container
 * that sleeps, or `sh -c env`): upstream BusyBox (scripts/build-busybox.sh; Debian's drops
 * environment names that are not identifiers, which the env-var specs read) as /bin/busybox
 * with every applet it lists linked into /bin, entry point `sh`, as the upstream image.
 */
export async function busyboxImage(name: string): Promise<LabImage> {
  const busybox = upstreamBusybox();
  return archiveOf(imageCache(), {
    name,
    inputs: [busybox],
    spec: async (root) => {
      await writeBusyboxRoot(root, busybox);
      return { name, layers: [root], cmd: ['sh'] };
    },
  });
}

/** Upstream BusyBox, the one scripts/build-busybox.sh built. */
export function upstreamBusybox(): string {
  requireTools('busybox-upstream');
  return realpathSync(which('busybox-upstream')!);
}

/**
 * A minimal root as busybox's image has it: /bin/busybox with every applet linked into /bin,
 * /tmp, and an /etc/passwd and /etc/group naming root.
 */
export async function writeBusyboxRoot(root: string, busybox: string): Promise<void> {
  // The root a temporary directory gave is 0700: images run as other users too (nonroot).
  await chmod(root, 0o755);
  await mkdir(join(root, 'bin'), { recursive: true });
  await mkdir(join(root, 'etc'), { recursive: true });
  await mkdir(join(root, 'tmp'), { mode: 0o1777 });
  await copyFile(busybox, join(root, 'bin', 'busybox'));
  for (const a of await busyboxApplets(busybox)) await symlink('busybox', join(root, 'bin', a));
  await writeFile(join(root, 'etc', 'passwd'), 'root:x:0:0:root:/root:/bin/sh\n');
  await writeFile(join(root, 'etc', 'group'), 'root:x:0:\n');
}

/** Where the lab's image archives are cached: beside the node binaries' own cache. */
export function imageCache(): string {
  requireTools('agnhost');
  // .cache/node/<hash>/agnhost → .cache/images/.
  return join(dirname(dirname(dirname(realpathSync(which('agnhost')!)))), 'images');
}

/** The host busybox's applets but those a real program of `tools` takes (/bin or /usr/bin). */
async function appletsBeside(tools: readonly { at: string }[]): Promise<string[]> {
  const taken = new Set<string>(tools.map((t) => t.at));
  return (await busyboxApplets()).filter(
    (a) => !taken.has(`/bin/${a}`) && !taken.has(`/usr/bin/${a}`),
  );
}

/** Every applet a static busybox has (`busybox --list`). */
async function busyboxApplets(busybox = BUSYBOX): Promise<string[]> {
  return (await run(busybox, ['--list'])).stdout.split('\n').filter((a) => a && a !== 'busybox');
}

/**
 * The DNS specs' glibc querier under `name` (upstream's glibc-dns-testing: Debian with dnsutils):
 * the host's dash as /bin/sh, bash, dig and getent with their shared libraries (glibc's
 * resolver, as upstream's), busybox's applets for every other command (seq, sleep, awk, ...),
 * entry point `sh`. The probes run `sh -c 'for i in $(seq 1 600); do dig ...; done'`.
 */
export async function dnsutilsImage(name: string): Promise<LabImage> {
  requireTools('agnhost', 'ldd');
  if (!existsSync(BUSYBOX))
    throw new Error(`${BUSYBOX} is missing: apt-get install busybox-static (./dev setup does)`);
  const cache = imageCache();
  const tools = hostTools(DNSUTILS_TOOLS);
  const libs = await librariesOf(tools);
  const applets = await appletsBeside(tools);
  return archiveOf(cache, {
    name,
    inputs: [BUSYBOX, ...tools.map((t) => t.path), ...libs],
    spec: async (root) => {
      await mkdir(join(root, 'bin'));
      await mkdir(join(root, 'tmp'), { mode: 0o1777 });
      await copyFile(BUSYBOX, join(root, 'bin', 'busybox'));
      for (const a of applets) await symlink('busybox', join(root, 'bin', a));
      await installTools(root, tools, libs);
      await writeEtc(root);
      return { name, layers: [root], cmd: ['sh'] };
    },
  });
}
