// What Kubernetes' e2e specs need from a lab beyond the lab itself: agnhost, busybox, the DNS
// specs' glibc-dns-testing and the other images the specs name (spec-images.ts) under the
// registry name the e2e framework is told to use (KUBE_TEST_REPO_LIST), and the kernel's SCTP
// support.
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { gunzipSync } from 'node:zlib';
import { run } from '@flock/exec';
import { requireTools, which } from '@flock/testkit';
import type { Lab } from '../core/lab.js';
import { agnhostImage, busyboxImage, dnsutilsImage, type LabImage } from '../node/images.js';
import { E2E_ALL_BINARY, E2E_BINARY, E2E_REGISTRY, repoList } from './ginkgo.js';
import { serveImages } from './registry.js';
import { PULLED_REPOSITORIES, specImage, specRepository } from './spec-images.js';

/** agnhost as the e2e framework names it: E2E_REGISTRY/agnhost:<the version built>. */
export function e2eAgnhostImage(): string {
  const [, tag] = agnhostImage().split(':');
  return `${E2E_REGISTRY}/agnhost:${tag}`;
}

/** The images an e2e binary names (`--list-images`, after KUBE_TEST_REPO_LIST). */
export async function e2eImages(repoListFile: string, binary = E2E_BINARY): Promise<string[]> {
  requireTools(binary);
  const { stdout } = await run(binary, ['--list-images'], {
    env: { KUBE_TEST_REPO_LIST: repoListFile },
  });
  return stdout
    .split('\n')
    .map((l) => l.trim())
    .filter(Boolean);
}

/**
 * Preload, on every node, what the specs of `binaries` run under the e2e registry name: agnhost
 * (the lab's own archive, tagged, also under the older tag the update specs start from),
 * busybox (node/images.ts busyboxImage), glibc-dns-testing, the DNS specs' glibc querier
 * (dnsutilsImage), and, when all of test/e2e is among them, the images spec-images.ts
 * assembles. The agnhost built must be the version the specs name. Returns the names preloaded.
 */
export async function preloadE2eImages(
  lab: Lab,
  workDir: string,
  binaries: readonly string[] = [E2E_BINARY],
): Promise<string[]> {
  const repoListFile = join(workDir, 'repo-list.yaml');
  await writeFile(repoListFile, repoList());
  const named = [
    ...new Set((await Promise.all(binaries.map((b) => e2eImages(repoListFile, b)))).flat()),
  ];
  const agnhost = e2eAgnhostImage();
  if (!named.includes(agnhost))
    throw new Error(
      `the e2e specs name no ${agnhost} (they name: ${named.filter((n) => n.includes('/agnhost:')).join(', ')}): scripts/build-node.sh and e2e/conformance must build the same k8s.io/kubernetes`,
    );
  // The pod and deployment update specs go from agnhost's previous tag to its current one: the
  // same program under two tags (they look at the image name only).
  const agnhosts = named.filter((n) => n.startsWith(`${E2E_REGISTRY}/agnhost:`));
  const busyboxes = named.filter((n) => n.startsWith(`${E2E_REGISTRY}/busybox:`));
  const dnsutils = named.filter((n) => n.startsWith(`${E2E_REGISTRY}/glibc-dns-testing:`));
  // The rest only for the certification run: ./dev test's specs run none of them.
  const others = binaries.includes(E2E_ALL_BINARY) ? named.filter((n) => specRepository(n)) : [];
  const archives: LabImage[] = [];
  // One at a time: each may build (nginx's Debian root), and the machine has two cores.
  for (const n of busyboxes) archives.push(await busyboxImage(n));
  for (const n of dnsutils) archives.push(await dnsutilsImage(n));
  for (const n of others) archives.push(await specImage(n));
  await Promise.all(
    lab.nodes.map(async (node) => {
      for (const tag of agnhosts) await node.ctr(['images', 'tag', '--force', agnhostImage(), tag]);
      await node.importImages(archives);
    }),
  );
  // What specs pull whatever a node holds (pull policy Always) comes from the lab's registry.
  const pulled = others.filter((n) => PULLED_REPOSITORIES.some((r) => r === specRepository(n)));
  if (pulled.length) await serveImages(lab, pulled);
  return [...agnhosts, ...busyboxes, ...dnsutils, ...others];
}

export interface SctpSupport {
  available: boolean;
  /** The commands run and what they printed, for docs/conformance.md. */
  evidence: string;
}

/**
 * Load the kernel's SCTP support if it has any (`modprobe sctp`: a module, or nothing to do when
 * it is built in), then look whether the kernel registered the protocol (/proc/net/protocols
 * lists SCTP and SCTPv6 once it has). The kernel's build configuration, when it exposes one,
 * says why not.
 */
export async function loadSctp(): Promise<SctpSupport> {
  const lines: string[] = [];
  const show = async (file: string, args: string[]) => {
    lines.push(`$ ${[file, ...args].join(' ')}`);
    if (!which(file)) {
      lines.push(`${file}: not installed`);
      return;
    }
    const r = await run(file, args, { okCodes: [0, 1, 2, 255], timeoutMs: 30_000 }).catch(
      (e: unknown) => ({ stdout: '', stderr: String(e), code: -1 }),
    );
    const out = (r.stdout + r.stderr).trim();
    if (out) lines.push(out);
    lines.push(`(exit ${r.code})`);
  };
  await show('uname', ['-r']);
  await show('modprobe', ['sctp']);
  const protocols = await readFile('/proc/net/protocols', 'utf8');
  const sctp = protocols.split('\n').filter((l) => /^SCTP/.test(l));
  lines.push('$ grep ^SCTP /proc/net/protocols');
  lines.push(sctp.length ? sctp.map((l) => l.split(/\s+/)[0]).join('\n') : '(no SCTP protocol)');
  const config = await readFile('/proc/config.gz').then(
    (b) => gunzipSync(b).toString(),
    () => undefined,
  );
  if (config !== undefined) {
    lines.push('$ zgrep CONFIG_IP_SCTP /proc/config.gz');
    lines.push(config.split('\n').find((l) => l.includes('CONFIG_IP_SCTP')) ?? '(not mentioned)');
  }
  return { available: sctp.length > 0, evidence: lines.join('\n') };
}
