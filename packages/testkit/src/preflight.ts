// Kernel and cluster tests never skip: when root or a tool is missing they fail with a
// message that says what to install.
import { accessSync, constants } from 'node:fs';
import { delimiter, join } from 'node:path';

/** What a lab node runs, built by scripts/build-node.sh into .cache/bin. */
export const NODE_BINARIES = [
  'kubelet',
  'kube-proxy',
  'containerd',
  'containerd-shim-runc-v2',
  'ctr',
  'crictl',
  'pause',
  'agnhost',
] as const;

/** Debian package that provides each tool the tests use. */
const PACKAGE_OF: Record<string, string> = {
  vtysh: 'scripts/fetch-frr.sh (Debian frr, unpacked; ./dev setup runs it)',
  ip: 'iproute2',
  nft: 'nftables',
  bird: 'bird2',
  birdc: 'bird2',
  ping: 'iputils-ping',
  socat: 'socat',
  conntrack: 'conntrack',
  tayga: 'tayga',
  nsenter: 'util-linux',
  sysctl: 'procps',
  go: 'Go >= 1.26 (golang)',
  kubectl: 'kubectl (./dev setup extracts it into .cache/bin)',
  helm: 'helm (./dev setup extracts it into .cache/bin)',
  'flock-controlplane':
    'the test control plane (./dev setup builds it: scripts/build-controlplane.sh)',
  cnitool: 'cnitool (./dev setup builds it: scripts/build-cnitool.sh)',
  coredns: "CoreDNS, the lab's cluster DNS (./dev setup builds it: scripts/build-coredns.sh)",
  'busybox-upstream':
    "upstream BusyBox, the e2e specs' busybox (./dev setup builds it: scripts/build-busybox.sh)",
  unshare: 'util-linux',
  tar: 'tar',
  runc: 'runc',
  buildah: 'buildah (builds the images: scripts/build-images.sh)',
  mmdebstrap: "mmdebstrap (assembles the images' Debian base: scripts/image-base.sh)",
  npm: "npm (Debian's npm, or any Node.js with npm)",
  ...Object.fromEntries(
    NODE_BINARIES.map((b) => [b, `${b} (./dev setup builds it: scripts/build-node.sh)`]),
  ),
};

export function which(tool: string): string | undefined {
  return (process.env['PATH'] ?? '')
    .split(delimiter)
    .map((dir) => join(dir, tool))
    .find(executable);
}

/** Throw unless every tool is on PATH; the message lists what to install. */
export function requireTools(...tools: string[]): void {
  const missing = tools.filter((t) => !which(t));
  if (missing.length) {
    const how = missing.map((t) => `${t} (install: ${PACKAGE_OF[t] ?? t})`).join(', ');
    throw new Error(
      `this test tier needs tools that are missing: ${how}. Run ./dev setup, or apt-get install them.`,
    );
  }
}

/** The reference CNI plugins scripts/build-cni-plugins.sh builds (chained after flock's). */
export const CNI_PLUGINS = ['bandwidth', 'tuning', 'sbr', 'portmap'] as const;

/**
 * The directory of the reference CNI plugins (.cache/bin/cni-plugins, on PATH through ./dev),
 * for CNI_PATH; throws with how to build them unless each of `plugins` is there.
 */
export function cniPluginsDir(...plugins: (typeof CNI_PLUGINS)[number][]): string {
  const dir = (process.env['PATH'] ?? '')
    .split(delimiter)
    .map((d) => join(d, 'cni-plugins'))
    .find((d) => (plugins.length ? plugins : CNI_PLUGINS).every((p) => executable(join(d, p))));
  if (!dir)
    throw new Error(
      `the reference CNI plugins (${CNI_PLUGINS.join(', ')}) are missing: run ./dev setup (scripts/build-cni-plugins.sh builds them into .cache/bin/cni-plugins)`,
    );
  return dir;
}

function executable(path: string): boolean {
  try {
    accessSync(path, constants.X_OK);
    return true;
  } catch {
    return false;
  }
}

/** Throw unless running as root (network namespaces, nftables and BIRD need it). */
export function requireRoot(): void {
  if (process.getuid?.() !== 0) {
    throw new Error(
      'the kernel tier needs root (network namespaces, nftables, BIRD): run the tests as root, e.g. sudo ./dev test',
    );
  }
}

/** Preflight for kernel-tier tests: root plus the given tools. */
export function requireKernelTier(...tools: string[]): void {
  requireRoot();
  requireTools('ip', ...tools);
}
