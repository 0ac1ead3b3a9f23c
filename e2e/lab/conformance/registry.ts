// A container registry for the specs that must pull (the ImageVolume spec's pull policy Always
// pulls kitten): distribution's `registry` (github.com/distribution/distribution v3, built by
// scripts/build-conformance-all.sh as e2e-registry) in the lab router's namespace, on
// [ROUTER_ID6]:5000 over plain HTTP, as a registry beside the top-of-rack router would be; its
// storage in the lab's directory. Each node's containerd names it for the e2e registry's host
// (certs.d/flock.local/hosts.toml: pull and resolve; the first node may push), and the first node
// pushes the images the specs pull, from what it preloaded. Then the registry is started again
// read-only (distribution's maintenance mode), so no spec's pod, which can reach the router like
// any host, can push or delete there: it has no authentication, and needs none to be read.
import { mkdir, writeFile } from 'node:fs/promises';
import { setTimeout as delay } from 'node:timers/promises';
import { join } from 'node:path';
import { requireTools, which } from '@flock/testkit';
import { stringify } from 'yaml';
import type { Lab } from '../core/lab.js';
import { ROUTER_ID6 } from '../core/plan.js';
import { running, stopDaemon } from '../../shared/daemon.js';
import { E2E_REGISTRY } from './ginkgo.js';

export const REGISTRY_BINARY = 'e2e-registry';
const PORT = 5000;
/** The host part of the e2e images' names: what containerd looks up in certs.d. */
const HOST = E2E_REGISTRY.split('/')[0]!;

function hostsToml(address: string, capabilities: string[]): string {
  return [
    `server = "http://${address}"`,
    '',
    `[host."http://${address}"]`,
    `  capabilities = [${capabilities.map((c) => `"${c}"`).join(', ')}]`,
    '',
  ].join('\n');
}

/**
 * Serve `images` (already preloaded on the first node) from a registry the nodes pull from.
 * Returns the address it serves on.
 */
export async function serveImages(lab: Lab, images: readonly string[]): Promise<string> {
  requireTools(REGISTRY_BINARY, 'curl');
  const [pusher] = lab.nodes;
  if (!pusher) throw new Error('serveImages: the lab has no node');
  const dir = join(lab.options.dir, 'registry');
  await mkdir(join(dir, 'data'), { recursive: true });
  const address = `[${ROUTER_ID6}]:${PORT}`;
  const configFile = async (readonly: boolean) => {
    const file = join(dir, readonly ? 'config-readonly.yml' : 'config.yml');
    await writeFile(
      file,
      stringify({
        version: 0.1,
        log: { level: 'warn' },
        storage: {
          filesystem: { rootdirectory: join(dir, 'data') },
          maintenance: { readonly: { enabled: readonly } },
        },
        http: { addr: address },
      }),
    );
    return file;
  };
  const daemon = lab.startInRouter('registry', which(REGISTRY_BINARY)!, [
    'serve',
    await configFile(false),
  ]);
  for (const [i, node] of lab.nodes.entries()) {
    const hosts = join(node.registryHosts, HOST);
    await mkdir(hosts, { recursive: true });
    await writeFile(
      join(hosts, 'hosts.toml'),
      hostsToml(address, i === 0 ? ['pull', 'resolve', 'push'] : ['pull', 'resolve']),
    );
  }
  for (const image of images) {
    // The registry may still be starting: the first push retries for a few seconds.
    for (let attempt = 1; ; attempt++) {
      const pushed = await pusher
        .ctr(
          ['images', 'push', '--plain-http', '--hosts-dir', pusher.registryHosts, image],
          300_000,
        )
        .then(
          () => undefined,
          (e: unknown) => (e instanceof Error ? e.message : JSON.stringify(e)),
        );
      if (pushed === undefined) break;
      if (!running(daemon) || attempt >= 20)
        throw new Error(
          `pushing ${image} to the lab registry at ${address} failed: ${pushed}\nregistry: ${daemon.logs.slice(-10).join('\n')}`,
        );
      await delay(500);
    }
  }
  await stopDaemon(daemon);
  const readonly = lab.startInRouter('registry-readonly', which(REGISTRY_BINARY)!, [
    'serve',
    await configFile(true),
  ]);
  // Serving again, and refusing to start an upload (the check can fail: a writable registry
  // answers 202). Asked with curl from the router's namespace, where the registry listens.
  const url = `http://${address}/v2/flock-probe/blobs/uploads/`;
  for (let attempt = 1; ; attempt++) {
    const { stdout: status } = await lab
      .router!.ns.exec('curl', ['-sg', '-o', '/dev/null', '-w', '%{http_code}', '-X', 'POST', url])
      .catch(() => ({ stdout: '000' }));
    if (status === '405') break;
    if (status !== '000' || !running(readonly) || attempt >= 20)
      throw new Error(
        `the read-only lab registry at ${address} answered ${status} to an upload (405 expected)\nregistry: ${readonly.logs.slice(-10).join('\n')}`,
      );
    await delay(500);
  }
  return address;
}
