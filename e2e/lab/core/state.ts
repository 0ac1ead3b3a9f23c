// The running lab's state file (DIR/state.json): what `status`, `kubectl`, `exec`, `kill-node`
// and `down` (after a crash) need to find the lab's processes and namespaces.
import { mkdir, readFile, readdir, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { z } from 'zod';
import { writeFileAtomic } from '@flock/exec';

export const LabState = z.object({
  pid: z.int(),
  dir: z.string(),
  kubeconfig: z.string(),
  controlPlaneDir: z.string(),
  controlPlaneNetns: z.string().optional(),
  router: z.string().optional(),
  nodes: z.array(
    z.object({
      name: z.string(),
      netns: z.string(),
      /** The node's mount and UTS namespace files (node/namespaces.ts). */
      mntFile: z.string(),
      utsFile: z.string(),
      /** The node's cgroup path in every hierarchy (node/cgroup.ts). */
      cgroup: z.string(),
    }),
  ),
  operatorPid: z.int().optional(),
});
export type LabState = z.infer<typeof LabState>;

export async function writeState(dir: string, state: LabState): Promise<void> {
  await writeFileAtomic(join(dir, 'state.json'), JSON.stringify(state, null, 2));
}

export async function readState(dir: string): Promise<LabState | undefined> {
  const text = await readFile(join(dir, 'state.json'), 'utf8').catch(() => undefined);
  return text === undefined ? undefined : LabState.parse(JSON.parse(text));
}

/** Requests from other `lab` invocations to the running lab: one file per request. */
const controlDir = (dir: string) => join(dir, 'control');
const NODE_NAME = /^[a-z0-9-]{1,63}$/;

/** What another `lab` invocation can ask the running lab to kill on a node. */
export type KillKind = 'kill-node' | 'kill-kubelet';
export interface KillRequest {
  kind: KillKind;
  node: string;
}

export async function requestKill(dir: string, kind: KillKind, node: string): Promise<void> {
  if (!NODE_NAME.test(node)) throw new Error(`bad node name ${JSON.stringify(node)}`);
  await mkdir(controlDir(dir), { recursive: true });
  await writeFileAtomic(join(controlDir(dir), `${kind}.${node}`), '');
}

/** Take (and remove) pending kill requests. */
export async function takeKillRequests(dir: string): Promise<KillRequest[]> {
  const files = await readdir(controlDir(dir)).catch(() => [] as string[]);
  const requests: KillRequest[] = [];
  for (const f of files) {
    const m = /^(kill-node|kill-kubelet)\.([a-z0-9-]{1,63})$/.exec(f);
    await rm(join(controlDir(dir), f), { force: true });
    if (m) requests.push({ kind: m[1] as KillKind, node: m[2] as string });
  }
  return requests;
}
