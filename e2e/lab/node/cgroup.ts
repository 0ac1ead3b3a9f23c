// A lab node's cgroups: one tree per node, the same path in every hierarchy the machine mounts
// (cgroup v1 hybrid here, plus the empty unified one), under this process's own cgroup so that
// nothing escapes what the machine put the lab in. The kubelet's cgroupRoot is the node's
// tree; the node's daemons (containerd and its shims, kubelet, kube-proxy, agent, BIRD) live in
// its `system` child. Killing everything in the tree is a node losing power; `remove` leaves
// nothing behind.
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { mkdir, readFile, readdir, rmdir, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { setTimeout as delay } from 'node:timers/promises';

const CGROUP_FS = '/sys/fs/cgroup';
const NAME = /^[a-z0-9][a-z0-9-]{0,62}$/;

/** Mounted hierarchies (directories of /sys/fs/cgroup that hold a cgroup.procs). */
export function hierarchies(): string[] {
  return readdirSync(CGROUP_FS)
    .map((h) => join(CGROUP_FS, h))
    .filter((h) => {
      try {
        return statSync(join(h, 'cgroup.procs')).isFile();
      } catch {
        return false;
      }
    });
}

/** The hierarchy that accounts CPU time (cgroup v1 cpuacct), if one is mounted. */
function cpuacct(): string | undefined {
  return hierarchies().find(
    (h) => statSync(join(h, 'cpuacct.usage'), { throwIfNoEntry: false }) !== undefined,
  );
}

/**
 * This process's cgroup path: the deepest one it sits in across hierarchies (a machine that
 * confines its jobs does so in at least one of them, e.g. memory).
 */
export function ownCgroup(): string {
  const paths = readFileSync('/proc/self/cgroup', 'utf8')
    .split('\n')
    .map((l) => l.split(':')[2] ?? '')
    .filter((p) => p.startsWith('/'));
  return paths.sort((a, b) => b.length - a.length)[0] ?? '/';
}

/** The cgroup tree of all lab nodes under `base` (default: this process's cgroup). */
export function labCgroupRoot(base = ownCgroup()): string {
  return join(base, 'flab');
}

export class NodeCgroup {
  /** The kubelet's cgroupRoot (a path inside every hierarchy). */
  readonly path: string;

  constructor(node: string, root = labCgroupRoot()) {
    if (!NAME.test(node)) throw new Error(`bad node name ${JSON.stringify(node)}`);
    this.path = join(root, node);
  }

  /** Every node tree under the lab root (what a crashed lab left), for `lab down`. */
  static leftovers(root = labCgroupRoot()): NodeCgroup[] {
    const names = new Set<string>();
    for (const h of hierarchies()) {
      try {
        for (const e of readdirSync(join(h, root), { withFileTypes: true }))
          if (e.isDirectory() && NAME.test(e.name)) names.add(e.name);
      } catch {
        /* no lab tree in this hierarchy */
      }
    }
    return [...names].map((n) => new NodeCgroup(n, root));
  }

  get systemPath(): string {
    return join(this.path, 'system');
  }

  /** Create the tree in every hierarchy (cpuset levels inherit their parent's CPUs and nodes). */
  async create(): Promise<void> {
    for (const h of hierarchies()) {
      let dir = h;
      for (const part of this.systemPath.split('/').filter(Boolean)) {
        const parent = dir;
        dir = join(dir, part);
        await mkdir(dir, { recursive: true });
        for (const f of ['cpuset.cpus', 'cpuset.mems']) {
          const own = await readFile(join(dir, f), 'utf8').catch(() => undefined);
          if (own !== undefined && own.trim() === '')
            await writeFile(join(dir, f), await readFile(join(parent, f), 'utf8'));
        }
      }
    }
  }

  /** Move a process (a node daemon just started) into the node's system cgroup everywhere. */
  async adopt(pid: number): Promise<void> {
    for (const h of hierarchies())
      await writeFile(join(h, this.systemPath, 'cgroup.procs'), `${pid}\n`).catch((e: unknown) => {
        // The process may already be gone (it failed at once): its exit says why.
        if ((e as NodeJS.ErrnoException).code !== 'ESRCH') throw e;
      });
  }

  /** Every process in the node's tree, or in its child `sub` (any hierarchy). */
  async pids(sub?: string): Promise<number[]> {
    const found = new Set<number>();
    const path = sub === undefined ? this.path : join(this.path, sub);
    for (const h of hierarchies()) await collect(join(h, path), found);
    return [...found];
  }

  /**
   * CPU time used so far (ns, cpuacct.usage) by the node's tree or its descendant `sub`,
   * processes that have exited included: the difference of two readings is what ran between
   * them. Undefined without a cpuacct hierarchy, or when `sub` does not exist.
   */
  async cpuNs(sub?: string): Promise<number | undefined> {
    const h = cpuacct();
    if (!h) return undefined;
    const path = sub === undefined ? this.path : join(this.path, sub);
    const text = await readFile(join(h, path, 'cpuacct.usage'), 'utf8').catch(() => undefined);
    return text === undefined ? undefined : Number(text.trim());
  }

  /** The path (below the node's tree) of the kubelet's cgroup of the pod `uid` (cgroupfs driver). */
  async podPath(uid: string): Promise<string | undefined> {
    const h = cpuacct();
    if (!h) return undefined;
    // kubepods/pod<uid> (Guaranteed), kubepods/burstable/pod<uid>, kubepods/besteffort/pod<uid>
    for (const qos of ['', 'burstable', 'besteffort']) {
      const rel = join('kubepods', qos, `pod${uid}`);
      if (statSync(join(h, this.path, rel), { throwIfNoEntry: false })) return rel;
    }
    return undefined;
  }

  /** SIGKILL everything in the tree until it stays empty (processes may fork meanwhile). */
  async killAll(timeoutMs = 10_000): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const pids = await this.pids();
      if (pids.length === 0) return;
      for (const pid of pids) {
        try {
          process.kill(pid, 'SIGKILL');
        } catch {
          /* already gone */
        }
      }
      if (Date.now() > deadline)
        throw new Error(`processes left in cgroup ${this.path}: ${pids.join(', ')}`);
      await delay(100);
    }
  }

  /** Kill everything and remove the tree from every hierarchy (and the lab root once empty). */
  async remove(): Promise<void> {
    await this.killAll();
    for (const h of hierarchies()) {
      await removeTree(join(h, this.path));
      await rmdir(join(h, dirname(this.path))).catch(() => undefined); // other nodes may remain
    }
  }
}

async function collect(dir: string, found: Set<number>): Promise<void> {
  const procs = await readFile(join(dir, 'cgroup.procs'), 'utf8').catch(() => '');
  for (const p of procs.split('\n').filter(Boolean)) found.add(Number(p));
  const entries = await readdir(dir, { withFileTypes: true }).catch(() => []);
  for (const e of entries) if (e.isDirectory()) await collect(join(dir, e.name), found);
}

/** rmdir a cgroup tree depth first (a cgroup is removed with rmdir, never with its files). */
export async function removeTree(dir: string): Promise<void> {
  const entries = await readdir(dir, { withFileTypes: true }).catch(() => undefined);
  if (entries === undefined) return;
  for (const e of entries) if (e.isDirectory()) await removeTree(join(dir, e.name));
  for (let i = 0; ; i++) {
    try {
      await rmdir(dir);
      return;
    } catch (e) {
      const code = (e as NodeJS.ErrnoException).code;
      if (code === 'ENOENT') return;
      // EBUSY while the kernel finishes reaping the last task.
      if (code !== 'EBUSY' || i >= 50) throw e;
      await delay(100);
    }
  }
}
