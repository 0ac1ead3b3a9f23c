// What makes a lab node a machine of its own: a network namespace (testkit's Netns), and a mount
// and a UTS namespace kept alive by bind mounts under /run/flab. Inside the mount namespace (slave
// propagation: the host's mounts reach in, nothing reaches out) the node's own directories are
// mounted where a node keeps them — /var/lib/kubelet, /var/lib/containerd, /etc/cni/net.d,
// /opt/cni/bin, ... — and tmpfs on /run/containerd and /run/netns, so kubelet's fixed paths
// and the pods' network namespace files are the node's alone. The host's mount table gains only
// the two namespace files per node.
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdir, readdir, rm, rmdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { run, type RunOptions, type RunResult } from '@flock/exec';
import { Netns } from '@flock/testkit';

/** Where the namespace files live (a private bind mount of itself, so they can be bound). */
export const NS_FILES_DIR = '/run/flab';

/** A node's directory (under its lab dir) and where it is mounted inside the node. */
export const NODE_MOUNTS: readonly { dir: string; at: string }[] = [
  { dir: 'kubelet', at: '/var/lib/kubelet' },
  { dir: 'containerd', at: '/var/lib/containerd' },
  { dir: 'pod-logs', at: '/var/log/pods' },
  { dir: 'container-logs', at: '/var/log/containers' },
  { dir: 'cni-conf', at: '/etc/cni/net.d' },
  { dir: 'cni-bin', at: '/opt/cni/bin' },
  { dir: 'opt-flock', at: '/opt/flock' },
  // The agent DaemonSet's hostPaths (the allocation store, the BGP passwords it keeps).
  { dir: 'var-lib-flock', at: '/var/lib/flock' },
  { dir: 'etc-flock', at: '/etc/flock' },
];
/**
 * Volatile on a real node (lost on reboot): the runtime's state, the pods' network namespace
 * files, flock's sockets and containerd's NRI socket (/run/nri/nri.sock, a fixed path: two
 * nodes' containerds starting at once raced for one host-wide socket). Shared within the node, so that a container mounting one with
 * HostToContainer propagation (the agent: /run/netns) sees what is mounted there later.
 */
const TMPFS_AT = ['/run/containerd', '/run/netns', '/run/flock', '/run/nri'];

async function ensureNsFilesDir(): Promise<void> {
  await mkdir(NS_FILES_DIR, { recursive: true });
  const mounted = await run('mountpoint', ['-q', NS_FILES_DIR], { okCodes: [0, 1, 32] });
  if (mounted.code === 0) return;
  await run('mount', ['--bind', NS_FILES_DIR, NS_FILES_DIR]);
  await run('mount', ['--make-private', NS_FILES_DIR]);
}

export class NodeNamespaces {
  private readonly children = new Set<ChildProcess>();

  private constructor(
    readonly netns: Netns,
    readonly mntFile: string,
    readonly utsFile: string,
  ) {}

  /** A new node: its network namespace, then mount and UTS namespaces set up for `hostname`. */
  static async create(prefix: string, hostname: string, dir: string): Promise<NodeNamespaces> {
    const netns = await Netns.create(prefix);
    const ns = new NodeNamespaces(
      netns,
      join(NS_FILES_DIR, `${netns.name}.mnt`),
      join(NS_FILES_DIR, `${netns.name}.uts`),
    );
    try {
      await ensureNsFilesDir();
      await writeFile(ns.mntFile, '');
      await writeFile(ns.utsFile, '');
      await run('unshare', [
        `--mount=${ns.mntFile}`,
        `--uts=${ns.utsFile}`,
        '--propagation',
        'slave',
        'true',
      ]);
      await ns.enter('hostname', [hostname]);
      for (const m of NODE_MOUNTS) {
        await mkdir(join(dir, m.dir), { recursive: true });
        // The mount point on the host side: an empty directory (the mount is not seen there).
        await mkdir(m.at, { recursive: true });
        await ns.enter('mount', ['--bind', join(dir, m.dir), m.at]);
      }
      for (const at of TMPFS_AT) {
        await mkdir(at, { recursive: true });
        await ns.mountVolatile(at);
      }
    } catch (e) {
      await ns.destroy();
      throw e;
    }
    return ns;
  }

  /** A reboot's loss: every volatile tmpfs (and what is mounted below it) replaced by an empty one. */
  async resetVolatile(): Promise<void> {
    for (const at of TMPFS_AT) {
      await this.enter('umount', ['--recursive', '--lazy', at]);
      await this.mountVolatile(at);
    }
  }

  private async mountVolatile(at: string): Promise<void> {
    await this.enter('mount', ['-t', 'tmpfs', '-o', 'mode=0755', 'tmpfs', at]);
    await this.enter('mount', ['--make-shared', at]);
  }

  get name(): string {
    return this.netns.name;
  }

  /** nsenter arguments that put a command into all of the node's namespaces. */
  nsenterArgs(file: string, args: readonly string[]): string[] {
    return [
      `--net=${this.netns.path}`,
      `--mount=${this.mntFile}`,
      `--uts=${this.utsFile}`,
      '--wd=/',
      '--',
      file,
      ...args,
    ];
  }

  /** Run a command inside the node and wait for it. */
  enter(file: string, args: readonly string[], options?: RunOptions): Promise<RunResult> {
    return run('nsenter', this.nsenterArgs(file, args), options);
  }

  /** Start a long-running process inside the node (nsenter execs it: the pid is the process). */
  spawn(file: string, args: readonly string[], env?: NodeJS.ProcessEnv): ChildProcess {
    const child = spawn('nsenter', this.nsenterArgs(file, args), {
      stdio: ['ignore', 'pipe', 'pipe'],
      env: env ? { ...process.env, ...env } : process.env,
      detached: true,
    });
    this.children.add(child);
    child.on('exit', () => this.children.delete(child));
    return child;
  }

  /** Kill what this object started, drop the mount and UTS namespaces, delete the netns. */
  async destroy(): Promise<void> {
    for (const child of this.children) child.kill('SIGKILL');
    await releaseNamespaceFiles([this.mntFile, this.utsFile]);
    await this.netns.destroy();
  }
}

/**
 * Unmount and remove namespace files (a namespace ends with its last process), and drop the
 * bind mount of NS_FILES_DIR once no node's files are left in it.
 */
export async function releaseNamespaceFiles(files: string[]): Promise<void> {
  for (const f of files) {
    await run('umount', [f], { okCodes: [0, 1, 32] });
    await rm(f, { force: true });
  }
  const left = await readdir(NS_FILES_DIR).catch(() => undefined);
  if (left === undefined || left.length > 0) return;
  await run('umount', [NS_FILES_DIR], { okCodes: [0, 1, 32] });
  await rmdir(NS_FILES_DIR).catch(() => undefined);
}
