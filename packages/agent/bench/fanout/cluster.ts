// The fan-out benchmark's API server: the test control plane (etcd + kube-apiserver, no
// controllers: nothing but the benchmark writes), flock's CRDs, and sig-network's
// ClusterNetworkPolicy CRD when asked (agents then also watch every Node).
import { allCrds } from '@flock/api';
import {
  CUSTOM_RESOURCE_DEFINITIONS,
  HttpTransport,
  NODECONFIGS,
  PEERSLICES,
  applyObject,
  resourcePath,
  type KubeObject,
} from '@flock/kube';
import {
  eventually,
  installCnpCrd,
  requireTools,
  startControlPlane,
  type ControlPlane,
} from '@flock/testkit';

export interface BenchCluster {
  cp: ControlPlane;
  api: HttpTransport;
  /** The kube-apiserver process, whose CPU and memory are measured. */
  apiserverPid: number;
}

export async function startBenchCluster(cnp: boolean): Promise<BenchCluster> {
  // Up front, so that a missing binary fails with what to build before anything starts.
  requireTools('flock-controlplane', 'kubectl');
  const cp = await startControlPlane();
  try {
    const apiserverPid = cp.state.pids['apiserver'];
    if (apiserverPid === undefined)
      throw new Error(`no kube-apiserver pid in ${JSON.stringify(cp.state.pids)}`);
    const api = new HttpTransport(cp.kubeConfig);
    for (const [, crd] of allCrds())
      await applyObject(api, CUSTOM_RESOURCE_DEFINITIONS, crd as unknown as KubeObject, {
        fieldManager: 'flock-bench',
      });
    await eventually('flock CRDs served', () =>
      Promise.all(
        [NODECONFIGS, PEERSLICES].map((r) => api.request({ method: 'GET', path: resourcePath(r) })),
      ),
    );
    if (cnp) await installCnpCrd(cp);
    return { cp, api, apiserverPid };
  } catch (error) {
    await cp.stop();
    throw error;
  }
}
