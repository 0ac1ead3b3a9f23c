// `lab down` after a crash: stop the lab process if it still runs, kill the processes it
// recorded (only if they still are what the state file says), kill every process in the nodes'
// cgroup trees (kubelets, containerds, shims, containers, agents, BIRDs) and remove the trees,
// release the nodes' mount and UTS namespaces (their mounts go with them), and remove every
// network namespace with the lab's prefix along with the processes inside.
import { readdir, readFile, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { setTimeout as delay } from 'node:timers/promises';
import { run } from '@flock/exec';
import { NodeCgroup } from '../node/cgroup.js';
import { NS_FILES_DIR, releaseNamespaceFiles } from '../node/namespaces.js';
import { LAB_PREFIX } from './plan.js';
import { readState } from './state.js';

async function cmdline(pid: number): Promise<string> {
  return (await readFile(`/proc/${pid}/cmdline`, 'utf8').catch(() => '')).replaceAll('\0', ' ');
}

async function killIf(pid: number | undefined, expect: string, say: (l: string) => void) {
  if (pid === undefined || !(await cmdline(pid)).includes(expect)) return;
  say(`killing ${expect} (pid ${pid})`);
  process.kill(pid, 'SIGTERM');
  for (let i = 0; i < 50 && (await cmdline(pid)); i++) await delay(200);
  if (await cmdline(pid)) process.kill(pid, 'SIGKILL');
}

/** The `flock-controlplane up` of this lab (found by its --dir; its children die with it). */
async function controlPlanePid(cpDir: string): Promise<number | undefined> {
  for (const entry of await readdir('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    const cmd = await cmdline(Number(entry));
    if (cmd.includes('flock-controlplane up') && cmd.includes(`--dir ${cpDir} `))
      return Number(entry);
  }
  return undefined;
}

export async function labNamespaces(): Promise<string[]> {
  const { stdout } = await run('ip', ['-j', 'netns', 'list']);
  const list = stdout.trim() ? (JSON.parse(stdout) as { name: string }[]) : [];
  return list.map((n) => n.name).filter((n) => n.startsWith(LAB_PREFIX) && /^[a-z0-9-]+$/.test(n));
}

/** Namespace files of lab nodes under /run/flab (recorded or not). */
async function namespaceFiles(): Promise<string[]> {
  const names = await readdir(NS_FILES_DIR).catch(() => [] as string[]);
  return names
    .filter((n) => n.startsWith(LAB_PREFIX) && /^[a-z0-9-]+\.(mnt|uts)$/.test(n))
    .map((n) => join(NS_FILES_DIR, n));
}

export async function cleanup(dir: string, say: (l: string) => void): Promise<void> {
  const state = await readState(dir);
  if (state) {
    await killIf(state.pid, 'lab', say);
    await killIf(state.operatorPid, 'operator', say);
    await killIf(await controlPlanePid(state.controlPlaneDir), 'flock-controlplane', say);
    await rm(state.controlPlaneDir, { recursive: true, force: true });
  }
  for (const cgroup of NodeCgroup.leftovers()) {
    const pids = await cgroup.pids();
    await cgroup.remove();
    say(`removed cgroup ${cgroup.path}${pids.length ? ` and ${pids.length} process(es)` : ''}`);
  }
  const files = await namespaceFiles();
  await releaseNamespaceFiles(files);
  if (files.length) say(`released ${files.length} node mount/UTS namespace(s)`);
  for (const name of await labNamespaces()) {
    const pids = (await run('ip', ['netns', 'pids', name], { okCodes: [0, 1] })).stdout
      .split(/\s+/)
      .filter(Boolean);
    for (const pid of pids) process.kill(Number(pid), 'SIGKILL');
    await run('ip', ['netns', 'del', name], { okCodes: [0, 1] });
    say(`removed namespace ${name}${pids.length ? ` and ${pids.length} process(es)` : ''}`);
  }
  await rm(dir, { recursive: true, force: true });
}
