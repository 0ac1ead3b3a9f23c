// The container runtime's side of CNI, as libcni does it: read the node's conflist, run each
// plugin from CNI_PATH with CNI_* in the environment and the plugin's config (plus the network's
// name and cniVersion, and prevResult for later plugins) on stdin; DEL runs them in reverse.
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { z } from 'zod';
import { run } from '@flock/exec';

const ConfList = z.object({
  cniVersion: z.string(),
  name: z.string(),
  plugins: z.array(z.looseObject({ type: z.string().regex(/^[a-zA-Z0-9_.-]+$/) })).min(1),
});

export const CniResult = z.looseObject({
  cniVersion: z.string(),
  ips: z.array(z.object({ address: z.string() })).default([]),
});
export type CniResult = z.infer<typeof CniResult>;

export interface CniPod {
  containerId: string;
  netnsPath: string;
  namespace: string;
  name: string;
  uid: string;
}

export class CniRuntime {
  constructor(
    /** Directory of plugin executables (CNI_PATH). */
    readonly binDir: string,
    /** The conflist file. */
    readonly confList: string,
  ) {}

  private async invoke(command: 'ADD' | 'DEL', pod: CniPod, prev?: unknown): Promise<unknown> {
    const list = ConfList.parse(JSON.parse(await readFile(this.confList, 'utf8')));
    const plugins = command === 'ADD' ? list.plugins : [...list.plugins].reverse();
    let result = prev;
    for (const plugin of plugins) {
      const config = { ...plugin, cniVersion: list.cniVersion, name: list.name };
      if (result !== undefined) Object.assign(config, { prevResult: result });
      const r = await run(join(this.binDir, plugin.type), [], {
        input: JSON.stringify(config),
        okCodes: [0, 1],
        timeoutMs: 60_000,
        env: {
          CNI_COMMAND: command,
          CNI_CONTAINERID: pod.containerId,
          CNI_NETNS: pod.netnsPath,
          CNI_IFNAME: 'eth0',
          CNI_ARGS: `K8S_POD_NAMESPACE=${pod.namespace};K8S_POD_NAME=${pod.name};K8S_POD_UID=${pod.uid}`,
          CNI_PATH: this.binDir,
          FLOCK_NODE: process.execPath,
        },
      });
      if (r.code !== 0)
        throw new Error(
          `CNI ${command} (${plugin.type}) failed: ${r.stdout.trim() || r.stderr.trim()}`,
        );
      if (command === 'ADD') result = JSON.parse(r.stdout);
    }
    return result;
  }

  async add(pod: CniPod): Promise<CniResult> {
    return CniResult.parse(await this.invoke('ADD', pod));
  }

  /** DEL; the previous result is passed so plugins may use it (flock does not need it). */
  async del(pod: CniPod, prev?: CniResult): Promise<void> {
    await this.invoke('DEL', pod, prev);
  }
}
