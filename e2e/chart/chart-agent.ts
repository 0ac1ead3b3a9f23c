// chart.cluster.test.ts's agent: the chart DaemonSet's agent run as a process on this machine
// (there is no kubelet), with the chart's own flags and this machine's paths, and a pod wired
// through the real CNI plugin the way a container runtime does it.
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { flockConflist } from '@flock/api';
import { createTestPod } from '@flock/agent/testing';
import type { HttpTransport } from '@flock/kube';
import type { Netns } from '@flock/testkit';
import { CniRuntime, type CniPod, type CniResult } from './cni-runtime.js';
import type { Daemon } from '../shared/daemon.js';
import { startUntil } from './cluster-support.js';
import { REPO, container, podSpec, type K8sObject } from './support.js';

const AGENT_MAIN = join(REPO, 'packages', 'agent', 'dist', 'src', 'main.js');
const PLUGIN_DIR = join(REPO, 'packages', 'cni', 'dist', 'bundle');

export interface ChartAgent {
  daemon: Daemon;
  /** The CNI socket the plugin talks to. */
  socket: string;
  birdConfig: string;
}

/** Start the agent with the DaemonSet's flags (later flags win: this machine's paths). */
export async function startChartAgent(o: {
  objects: K8sObject[];
  kubeconfig: string;
  nodeName: string;
  namespace: string;
  nodeNs: Netns;
  dir: string;
}): Promise<ChartAgent> {
  const paths = { run: join(o.dir, 'run'), lib: join(o.dir, 'lib'), bird: join(o.dir, 'bird') };
  for (const p of Object.values(paths)) await mkdir(p, { recursive: true, mode: 0o700 });
  const ds = podSpec(o.objects, 'DaemonSet', 'flock-agent');
  const chartArgs = container(ds.containers, 'agent').args ?? [];
  const socket = join(paths.run, 'cni.sock');
  const birdConfig = join(paths.bird, 'bird.conf');
  const daemon = await startUntil(
    process.execPath,
    [
      AGENT_MAIN,
      ...chartArgs,
      ...['--kubeconfig', o.kubeconfig, '--host-netns', o.nodeNs.path, '--socket', socket],
      ...['--store', join(paths.lib, 'allocations.json'), '--bird-config', birdConfig],
      ...['--bird-socket', join(paths.bird, 'bird.ctl'), '--health-port', '0', '--resync', '2s'],
    ],
    { NODE_NAME: o.nodeName, POD_NAMESPACE: o.namespace },
    /start-up: ready/,
  );
  return { daemon, socket, birdConfig };
}

/** Create Pod default/web on the node and ADD it through the plugin; `del` undoes the ADD. */
export async function wirePod(o: {
  admin: HttpTransport;
  nodeName: string;
  socket: string;
  podNs: Netns;
  dir: string;
}): Promise<{ result: CniResult; del: () => Promise<void> }> {
  await o.admin
    .request({
      method: 'POST',
      path: '/api/v1/namespaces/default/serviceaccounts',
      body: { metadata: { name: 'default' } },
    })
    .catch(() => undefined); // already there
  const uid = await createTestPod(o.admin, { name: 'web', nodeName: o.nodeName });
  const confList = join(o.dir, 'flock.conflist');
  await writeFile(confList, JSON.stringify(flockConflist({ socketPath: o.socket })));
  const runtime = new CniRuntime(PLUGIN_DIR, confList);
  const cniPod: CniPod = {
    containerId: 'chart0123456789',
    netnsPath: o.podNs.path,
    namespace: 'default',
    name: 'web',
    uid,
  };
  const result = await runtime.add(cniPod);
  return { result, del: () => runtime.del(cniPod, result) };
}
