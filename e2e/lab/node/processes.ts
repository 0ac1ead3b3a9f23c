// What a process on a lab node really runs with, read from /proc (not from the pod spec): its
// command line, effective capabilities, user and whether its root file system is read-only.
// For checking the chart's least-privilege promises on the running containers.
import { readFile } from 'node:fs/promises';
import type { LabNode } from './lab-node.js';

/** capability(7) numbers → names (the ones a container could get). */
const CAP_NAMES = [
  'CHOWN',
  'DAC_OVERRIDE',
  'DAC_READ_SEARCH',
  'FOWNER',
  'FSETID',
  'KILL',
  'SETGID',
  'SETUID',
  'SETPCAP',
  'LINUX_IMMUTABLE',
  'NET_BIND_SERVICE',
  'NET_BROADCAST',
  'NET_ADMIN',
  'NET_RAW',
  'IPC_LOCK',
  'IPC_OWNER',
  'SYS_MODULE',
  'SYS_RAWIO',
  'SYS_CHROOT',
  'SYS_PTRACE',
  'SYS_PACCT',
  'SYS_ADMIN',
  'SYS_BOOT',
  'SYS_NICE',
  'SYS_RESOURCE',
  'SYS_TIME',
  'SYS_TTY_CONFIG',
  'MKNOD',
  'LEASE',
  'AUDIT_WRITE',
  'AUDIT_CONTROL',
  'SETFCAP',
  'MAC_OVERRIDE',
  'MAC_ADMIN',
  'SYSLOG',
  'WAKE_ALARM',
  'BLOCK_SUSPEND',
  'AUDIT_READ',
  'PERFMON',
  'BPF',
  'CHECKPOINT_RESTORE',
];

export interface NodeProcess {
  pid: number;
  argv: string[];
}

const isBird = (argv: string[]) => /\/bird$/.test(argv[0] ?? '');

/** Which flock program an argv runs (the chart's containers and the node's own daemons alike). */
export const FLOCK_ARGV = {
  agent: (argv: string[]) => argv.some((a) => a.endsWith('agent/dist/src/main.js')),
  operator: (argv: string[]) => argv.some((a) => a.endsWith('operator/dist/src/main.js')),
  bird: (argv: string[]) => isBird(argv),
  /** The BFD speaker: a BIRD started on a bfd.conf (the chart's and the processes lab's). */
  bfdBird: (argv: string[]) => isBird(argv) && argv.some((a) => a.endsWith('/bfd.conf')),
  /** The BGP BIRD: every other BIRD. */
  bgpBird: (argv: string[]) => isBird(argv) && !argv.some((a) => a.endsWith('/bfd.conf')),
} as const;

/**
 * The processes in one of the node's cgroups whose argv matches: `kubepods` (the kubelet's tree:
 * the containers) or `system` (the node's own daemons).
 */
export async function nodeProcesses(
  node: LabNode,
  cgroup: 'kubepods' | 'system',
  match: (argv: string[]) => boolean,
): Promise<NodeProcess[]> {
  const out: NodeProcess[] = [];
  for (const pid of await node.cgroup.pids(cgroup)) {
    const cmdline = await readFile(`/proc/${pid}/cmdline`, 'utf8').catch(() => '');
    const argv = cmdline.split('\0').filter(Boolean);
    if (argv.length && match(argv)) out.push({ pid, argv });
  }
  return out;
}

/** The processes of the node's containers (the kubelet's kubepods tree) whose argv matches. */
export const containerProcesses = (node: LabNode, match: (argv: string[]) => boolean) =>
  nodeProcesses(node, 'kubepods', match);

/**
 * The processes of one pod's containers whose argv matches: the kubelet names a pod's cgroup
 * after its UID (`…/kubepods/<class>/pod<UID>/…`), which tells two replicas on one node apart.
 */
export async function podProcesses(
  node: LabNode,
  podUid: string,
  match: (argv: string[]) => boolean,
): Promise<NodeProcess[]> {
  const out: NodeProcess[] = [];
  for (const p of await containerProcesses(node, match)) {
    const cgroups = await readFile(`/proc/${p.pid}/cgroup`, 'utf8').catch(() => '');
    if (cgroups.includes(`/pod${podUid}/`)) out.push(p);
  }
  return out;
}

/** The effective capabilities of a process, by name, sorted. */
export function decodeCapabilities(hex: string): string[] {
  const bits = BigInt(`0x${hex}`);
  return CAP_NAMES.filter((_, i) => (bits >> BigInt(i)) & 1n).sort();
}

export interface ProcessPrivileges {
  capabilities: string[];
  uid: number;
  /** The mount at / is read-only. */
  readOnlyRoot: boolean;
  /** Mount points (inside the container) that are bind mounts of the node's own directories. */
  mountPoints: string[];
}

export async function processPrivileges(pid: number): Promise<ProcessPrivileges> {
  const status = await readFile(`/proc/${pid}/status`, 'utf8');
  const field = (name: string) => {
    const m = new RegExp(`^${name}:\\s*(.+)$`, 'm').exec(status);
    if (!m) throw new Error(`/proc/${pid}/status has no ${name}`);
    return m[1]!.trim();
  };
  const mounts = (await readFile(`/proc/${pid}/mountinfo`, 'utf8')).split('\n').filter(Boolean);
  // mountinfo: ID PARENT MAJ:MIN ROOT MOUNTPOINT OPTIONS ... - FSTYPE SOURCE SUPEROPTIONS
  const rows = mounts.map((l) => l.split(' '));
  const root = rows.find((r) => r[4] === '/');
  return {
    capabilities: decodeCapabilities(field('CapEff')),
    uid: Number(field('Uid').split(/\s+/)[1]), // effective uid
    readOnlyRoot: root !== undefined && root[5]!.split(',').includes('ro'),
    mountPoints: rows.map((r) => r[4]!),
  };
}
