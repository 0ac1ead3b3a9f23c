// What Kubernetes' e2e specs need from a lab beyond the lab itself: agnhost, busybox and the DNS
// specs' glibc-dns-testing under the registry name the e2e framework is told to use
// (KUBE_TEST_REPO_LIST), and the kernel's SCTP support.
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { gunzipSync } from 'node:zlib';
import { run } from '@flock/exec';
import { requireTools, which } from '@flock/testkit';
import type { Lab } from '../core/lab.js';
import { agnhostImage, busyboxImage, dnsutilsImage } from '../node/images.js';
import { E2E_BINARY, E2E_REGISTRY, repoList } from './ginkgo.js';

/** agnhost as the e2e framework names it: E2E_REGISTRY/agnhost:<the version built>. */
export function e2eAgnhostImage(): string {
  const [, tag] = agnhostImage().split(':');
  return `${E2E_REGISTRY}/agnhost:${tag}`;
}

/** The images the e2e binary names (`--list-images`, after KUBE_TEST_REPO_LIST). */
export async function e2eImages(repoListFile: string): Promise<string[]> {
  requireTools(E2E_BINARY);
  const { stdout } = await run(E2E_BINARY, ['--list-images'], {
    env: { KUBE_TEST_REPO_LIST: repoListFile },
  });
  return stdout
    .split('\n')
    .map((l) => l.trim())
    .filter(Boolean);
}

/**
 * Preload, on every node, what the specs run under the e2e registry name: agnhost (the lab's
 * own archive, tagged), busybox (node/images.ts busyboxImage) and glibc-dns-testing, the DNS
 * specs' glibc querier (dnsutilsImage). The agnhost built must be the version the specs name.
 */
export async function preloadE2eImages(lab: Lab, workDir: string): Promise<string[]> {
  const repoListFile = join(workDir, 'repo-list.yaml');
  await writeFile(repoListFile, repoList());
  const named = await e2eImages(repoListFile);
  const agnhost = e2eAgnhostImage();
  if (!named.includes(agnhost))
    throw new Error(
      `the e2e specs name no ${agnhost} (they name: ${named.filter((n) => n.includes('/agnhost:')).join(', ')}): scripts/build-node.sh and e2e/conformance must build the same k8s.io/kubernetes`,
    );
  const busyboxes = named.filter((n) => n.startsWith(`${E2E_REGISTRY}/busybox:`));
  const dnsutils = named.filter((n) => n.startsWith(`${E2E_REGISTRY}/glibc-dns-testing:`));
  const archives = await Promise.all([
    ...busyboxes.map((n) => busyboxImage(n)),
    ...dnsutils.map((n) => dnsutilsImage(n)),
  ]);
  await Promise.all(
    lab.nodes.map(async (node) => {
      await node.ctr(['images', 'tag', '--force', agnhostImage(), agnhost]);
      await node.importImages(archives);
    }),
  );
  return [agnhost, ...busyboxes, ...dnsutils];
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
