// What Kubernetes' e2e specs need from a lab beyond the lab itself: agnhost under the registry
// name the e2e framework is told to use (KUBE_TEST_REPO_LIST), and the kernel's SCTP support.
import { readFile } from 'node:fs/promises';
import { gunzipSync } from 'node:zlib';
import { run } from '@flock/exec';
import { which } from '@flock/testkit';
import type { Lab } from '../lab.js';
import { agnhostImage } from '../node/images.js';
import { E2E_REGISTRY } from './ginkgo.js';

/** agnhost as the e2e framework names it: E2E_REGISTRY/agnhost:<the version built>. */
export function e2eAgnhostImage(): string {
  const [, tag] = agnhostImage().split(':');
  return `${E2E_REGISTRY}/agnhost:${tag}`;
}

/** Tag every node's agnhost (imported from the lab's archive) under the e2e framework's name. */
export async function preloadE2eImages(lab: Lab): Promise<string[]> {
  const image = e2eAgnhostImage();
  await Promise.all(
    lab.nodes.map(async (node) => {
      await node.ctr(['images', 'tag', '--force', agnhostImage(), image]);
    }),
  );
  return [image];
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
